/* lease_score.c - placement scores, kept once per distinct score.
 *
 * A placed lease's score (struct place_score, 72 bytes) used to sit in every
 * controller lease record, pending and ended ones too. Leases placed alike
 * score alike: 8,000 placed leases of a 1,000-node bench_memory run had 165
 * distinct scores. So the record keeps a pointer (NULL: the zero score) to
 * an interned, counted copy, shared by every lease with the same score
 * (bench/results/memory.md: ~7 MiB less at 120,000 leases).
 *
 * Scores are compared byte for byte (memcmp, as the row cache always did): two
 * equal scores whose padding differs are merely kept twice, never confused.
 * Each kept score knows its table, so that dropping one needs no struct ctl
 * (lease_release_mem). Loop thread only. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"

#define SCORES_FIRST_BUCKETS 64

/* One kept score; s first, so that a lease's pointer is the entry's. */
struct lease_score {
	struct place_score s;
	struct lease_scores *tab;
	struct lease_score *next; /* in its bucket */
	uint64_t hash;
	size_t refs;
};

struct lease_scores {
	struct lease_score **b;
	size_t nb, n;
};

static const struct place_score zero_score;

const struct place_score *lease_score(const struct ctl_lease *l)
{
	return l->score ? l->score : &zero_score;
}

static uint64_t score_hash(const struct place_score *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (size_t i = 0; i < sizeof(*s); i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

/* Twice the buckets, once there are more scores than buckets; false out of
 * memory (the table stays as it was, only slower). */
static bool scores_grow(struct lease_scores *t)
{
	size_t nb = t->nb ? t->nb * 2 : SCORES_FIRST_BUCKETS;
	struct lease_score **b = calloc(nb, sizeof(*b));
	if (!b)
		return false;
	for (size_t i = 0; i < t->nb; i++)
		for (struct lease_score *e = t->b[i], *next; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	free(t->b);
	t->b = b;
	t->nb = nb;
	return true;
}

bool lease_score_set(struct ctl *c, struct ctl_lease *l, const struct place_score *s)
{
	struct lease_scores *t = c->lt.scores;
	if (!t && !(t = c->lt.scores = calloc(1, sizeof(*t))))
		return false;
	if (t->n >= t->nb && !scores_grow(t) && !t->nb)
		return false;
	uint64_t h = score_hash(s);
	struct lease_score **head = &t->b[h & (t->nb - 1)], *e = *head;
	while (e && (e->hash != h || memcmp(&e->s, s, sizeof(*s))))
		e = e->next;
	if (!e) {
		if (!(e = malloc(sizeof(*e))))
			return false;
		memcpy(&e->s, s, sizeof(*s));
		e->tab = t;
		e->hash = h;
		e->refs = 0;
		e->next = *head;
		*head = e;
		t->n++;
	}
	e->refs++; /* before the drop: the old score may be this one */
	lease_score_drop(l);
	l->score = &e->s;
	return true;
}

void lease_score_drop(struct ctl_lease *l)
{
	if (!l->score)
		return;
	struct lease_score *e = (struct lease_score *)(uintptr_t)l->score;
	l->score = NULL;
	if (--e->refs)
		return;
	struct lease_scores *t = e->tab;
	struct lease_score **p = &t->b[e->hash & (t->nb - 1)];
	while (*p != e)
		p = &(*p)->next;
	*p = e->next;
	t->n--;
	free(e);
}

size_t ctl_lease_scores_kept(const struct ctl *c)
{
	return c->lt.scores ? c->lt.scores->n : 0;
}

void ctl_lease_scores_free(struct ctl *c)
{
	struct lease_scores *t = c->lt.scores;
	if (!t)
		return;
	for (size_t i = 0; i < t->nb; i++)
		for (struct lease_score *e = t->b[i], *next; e; e = next) {
			next = e->next;
			free(e); /* none left once the leases are gone */
		}
	free(t->b);
	free(t);
	c->lt.scores = NULL;
}
