/* fuzz.h - what the libFuzzer harnesses share (tests/fuzz/README.md).
 *
 * Each fuzz_*.c defines LLVMFuzzerTestOneInput for one parser of outside
 * input. Built with clang -fsanitize=fuzzer (make fuzz) it is a libFuzzer
 * binary; built with replay.c (every build, make check) it replays its
 * committed corpus under the build's sanitizers. A harness aborts on a
 * broken contract (a round trip that differs, an error without a message),
 * which both drivers report as a crash. */
#ifndef SL_FUZZ_H
#define SL_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                              \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "fuzz contract broken at %s:%d: %s\n", __FILE__, \
				__LINE__, #cond);                                     \
			abort();                                                      \
		}                                                                     \
	} while (0)

/* A NUL-terminated copy of the input (to free()). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
	char *t = malloc(size + 1);
	if (!t)
		abort();
	if (size)
		memcpy(t, data, size);
	t[size] = 0;
	return t;
}

#endif
