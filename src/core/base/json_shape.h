/* json_shape.h - JSON text kept as a shape, shared, and its own numbers.
 *
 * Many holders keep JSON texts that differ only in their numbers: every
 * agent's last heartbeat "gpus" has the same keys, flags and lists on every
 * node of a type, with other temperatures and watts (~1 KB a node, 10,000
 * nodes: bench/results/memory.md). json_shape_split takes the numbers out:
 * the shape is the text with each number replaced by '#' (which JSON has
 * nowhere outside its strings), one copy of which the holders can share
 * (sl_ctext); the numbers are packed four bits a character (a two-digit
 * figure takes 1.5 bytes). json_shape_join puts them back: the text byte
 * for byte as it was split, spacing and number spelling included.
 *
 * Pure: allocation only. */
#ifndef SL_JSON_SHAPE_H
#define SL_JSON_SHAPE_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

/* Appends text's shape to shape and its numbers, packed, to nums (bytes:
 * use nums->len, they may hold NULs). A number is a run of "0-9 - . e E +"
 * outside a string that starts with a digit or '-'. SL_EINVAL (the buffers
 * then hold a part) when text has a '#' outside its strings or a string
 * that does not end; the buffers' own errors otherwise (sl_buf). Nothing
 * else is checked: any other text joins back as it was. */
enum sl_err json_shape_split(const char *text, struct sl_buf *shape, struct sl_buf *nums) SL_MUST_USE;

/* Appends to out the text that shape and nums (nlen bytes) were split
 * from. SL_EINVAL when they do not belong together (too few or too many
 * numbers); out's own errors otherwise. */
enum sl_err json_shape_join(const char *shape, const unsigned char *nums, size_t nlen,
			    struct sl_buf *out) SL_MUST_USE;

#endif
