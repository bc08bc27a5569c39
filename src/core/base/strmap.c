/* strmap.c - open addressing with linear probing and a power-of-two table.
 *
 * The table stores each key's full hash next to it, so a probe compares
 * strings only when the hashes match (a longer run costs 24-byte slots read,
 * not string compares); it grows past 3/4 load, without tombstones: a delete
 * shifts the rest of its run back. 3/4, not 1/2: the controller keeps five
 * maps of one entry per node, and at 10,000 nodes each held 32,768 slots
 * (768 KiB) at 1/2 where 3/4 holds them in 16,384 (bench/results/memory.md). */
#include "strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct strmap_slot {
	char *key; /* NULL = empty */
	uint64_t hash;
	int val;
};

struct strmap {
	struct strmap_slot *slots;
	size_t cap; /* power of two, or 0 */
	size_t count;
};

/* FNV-1a, 64 bit: simple, fixed and good enough for names. */
static uint64_t strmap_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3u;
	}
	return h;
}

enum sl_err strmap_new(struct strmap **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? SL_OK : SL_ENOMEM;
}

void strmap_free(struct strmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].key);
	free(m->slots);
	free(m);
}

/* The slot holding key, or the empty slot where it would go. */
static struct strmap_slot *strmap_probe(struct strmap_slot *slots, size_t cap,
					 const char *key, uint64_t h)
{
	size_t mask = cap - 1;
	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		struct strmap_slot *s = &slots[i];
		if (!s->key || (s->hash == h && strcmp(s->key, key) == 0))
			return s;
	}
}

static enum sl_err strmap_grow(struct strmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 16;
	struct strmap_slot *ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return SL_ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		struct strmap_slot *s = &m->slots[i];
		if (s->key)
			*strmap_probe(ns, ncap, s->key, s->hash) = *s;
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return SL_OK;
}

enum sl_err strmap_add(struct strmap *m, const char *key, int val)
{
	uint64_t h = strmap_hash(key);
	if (m->cap && strmap_probe(m->slots, m->cap, key, h)->key)
		return SL_EEXIST;
	if (m->count >= STRMAP_MAX_ENTRIES)
		return SL_ELIMIT;
	if ((m->count + 1) * 4 > m->cap * 3) {
		enum sl_err e = strmap_grow(m);
		if (e != SL_OK)
			return e;
	}
	size_t n = strlen(key) + 1;
	char *copy = malloc(n);
	if (!copy)
		return SL_ENOMEM;
	memcpy(copy, key, n);
	struct strmap_slot *s = strmap_probe(m->slots, m->cap, key, h);
	s->key = copy;
	s->hash = h;
	s->val = val;
	m->count++;
	return SL_OK;
}

int strmap_get(const struct strmap *m, const char *key, int missing)
{
	if (!m || !m->cap)
		return missing;
	const struct strmap_slot *s = strmap_probe(m->slots, m->cap, key, strmap_hash(key));
	return s->key ? s->val : missing;
}

size_t strmap_count(const struct strmap *m)
{
	return m ? m->count : 0;
}

size_t strmap_slots(const struct strmap *m)
{
	return m ? m->cap : 0;
}

/* Backward-shift deletion: every later slot of the run whose home lies
 * cyclically at or before the hole moves into it, so probes never need
 * tombstones. */
bool strmap_del(struct strmap *m, const char *key)
{
	if (!m || !m->cap)
		return false;
	struct strmap_slot *s = strmap_probe(m->slots, m->cap, key, strmap_hash(key));
	if (!s->key)
		return false;
	free(s->key);
	size_t mask = m->cap - 1, hole = (size_t)(s - m->slots);
	for (size_t j = (hole + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
		size_t home = (size_t)m->slots[j].hash & mask;
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			m->slots[hole] = m->slots[j];
			hole = j;
		}
	}
	m->slots[hole].key = NULL;
	m->count--;
	return true;
}
