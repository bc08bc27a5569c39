/* test_checkpoint_note.c - checkpoint_from_note: how a stored or exported
 * checkpoint note reaches the verifier (the controller's online check and
 * `suanli audit verify` share it). A good note comes back as signed; a note
 * that is damaged, empty or filed under another size becomes an unsigned
 * checkpoint of the filed size, which then fails verification there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "checkpoint.h"
#include "merkle.h"

#define ORIGIN "suanli.test/audit"

struct fixture {
	uint8_t pk[CHECKPOINT_PUBKEY_SIZE], sk[CHECKPOINT_SECKEY_SIZE];
	struct checkpoint cp;
	char note[CHECKPOINT_TEXT_MAX + 1];
};

static void make(struct fixture *f, uint64_t size)
{
	uint8_t seed[CHECKPOINT_SEED_SIZE], root[MERKLE_HASH_SIZE];
	memset(seed, 7, sizeof(seed));
	checkpoint_keypair_from_seed(seed, f->pk, f->sk);
	merkle_empty_root(root);
	size_t len;
	assert_int_equal(checkpoint_init(&f->cp, ORIGIN, size, root, 1700000000000000000LL, NULL),
			 SL_OK);
	assert_int_equal(checkpoint_sign(&f->cp, f->sk, NULL), SL_OK);
	assert_int_equal(checkpoint_format(&f->cp, f->note, sizeof(f->note), &len, NULL), SL_OK);
}

static void test_good_note_is_the_signed_checkpoint(void **state)
{
	(void)state;
	struct fixture f;
	struct checkpoint out;
	make(&f, 42);
	checkpoint_from_note("other.origin", 42, f.note, &out);
	assert_memory_equal(&out, &f.cp, sizeof(out));
	assert_int_equal(checkpoint_verify(&out, f.pk, NULL), SL_OK);
}

static void test_bad_notes_become_unsigned(void **state)
{
	(void)state;
	struct fixture f;
	make(&f, 42);
	char damaged[sizeof(f.note)];
	memcpy(damaged, f.note, sizeof(damaged));
	damaged[strlen(ORIGIN) + 1] = '9'; /* "42" -> "92": signature no longer canonical of it */
	char trailing[sizeof(f.note) + 2];
	snprintf(trailing, sizeof(trailing), "%sx", f.note);
	static const uint8_t zero[CHECKPOINT_SIG_SIZE];
	const struct {
		const char *note;
		uint64_t filed;
	} cases[] = {
		{f.note, 41},   /* filed under another size */
		{"", 42},       /* empty */
		{"garbage", 42},
		{trailing, 42},
		{damaged, 92},  /* parses as size 92 but is no longer signed right... */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct checkpoint out;
		memset(&out, 0x5a, sizeof(out));
		checkpoint_from_note(ORIGIN, cases[i].filed, cases[i].note, &out);
		assert_int_equal(out.size, cases[i].filed);
		assert_string_equal(out.origin, ORIGIN);
		if (i < 4) { /* unsigned: everything but origin and size cleared */
			assert_memory_equal(out.sig, zero, sizeof(out.sig));
			assert_int_equal(out.time_ns, 0);
		}
		/* ...and none of them verifies. */
		struct sl_diag d;
		assert_int_not_equal(checkpoint_verify(&out, f.pk, &d), SL_OK);
	}
}

static void test_origin_is_bounded(void **state)
{
	(void)state;
	char origin[CHECKPOINT_ORIGIN_MAX + 50];
	memset(origin, 'o', sizeof(origin) - 1);
	origin[sizeof(origin) - 1] = 0;
	struct checkpoint out;
	checkpoint_from_note(origin, 3, "", &out);
	assert_int_equal(strlen(out.origin), CHECKPOINT_ORIGIN_MAX);
	assert_int_equal(out.size, 3);
}

int main(void)
{
	if (sodium_init() < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_note_is_the_signed_checkpoint),
		cmocka_unit_test(test_bad_notes_become_unsigned),
		cmocka_unit_test(test_origin_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
