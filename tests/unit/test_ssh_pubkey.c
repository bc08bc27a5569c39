/* test_ssh_pubkey.c - SSH public key lines (ssh_pubkey.h): every accepted
 * type, the fingerprint exactly as `ssh-keygen -lf` prints it, and the
 * refusals a renter will meet (a private key, a typo in the body, a body of
 * another type, two keys, an unknown type). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "ssh_pubkey.h"

/* ssh-keygen -t ed25519 output and its `ssh-keygen -lf` fingerprint. */
static const char ed[] = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop\n";
static const char ed_fp[] = "SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU";

static void test_accepts(void **state)
{
	(void)state;
	struct ssh_pubkey k;
	struct sl_diag d;
	char out[SSH_KEY_LINE_MAX + 1];
	assert_int_equal(ssh_pubkey_parse(ed, &k, out, sizeof(out), &d), SL_OK);
	assert_string_equal(k.type, "ssh-ed25519");
	assert_string_equal(k.comment, "alice@laptop");
	assert_int_equal(k.blob_len, 51);
	assert_string_equal(out, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop");
	assert_true(!strncmp(k.fingerprint, "SHA256:", 7));
	assert_int_equal(strlen(k.fingerprint), 7 + 43);
	assert_string_equal(k.fingerprint, ed_fp); /* what ssh-keygen -lf prints */
	/* no comment, surrounding blanks */
	assert_int_equal(ssh_pubkey_parse("  ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl  ",
					  &k, NULL, 0, &d),
			 SL_OK);
	assert_string_equal(k.comment, "");
}

static void test_refuses(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJ! x",
		/* an ed25519 body under the rsa type */
		"ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
		"ssh-dss AAAAB3NzaC1kc3MAAACBAP",
		"ssh-ed25519",
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a\n"
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl b",
	};
	struct ssh_pubkey k;
	memset(&k, 0x5a, sizeof(k));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sl_diag d;
		sl_diag_clear(&d);
		assert_int_equal(ssh_pubkey_parse(bad[i], &k, NULL, 0, &d), SL_EINVAL);
		assert_true(strstr(d.msg, "not an SSH public key") != NULL);
		assert_true(d.hint[0] != 0);
	}
	assert_int_equal((unsigned char)k.type[0], 0x5a); /* untouched on refusal */
	static const struct {
		int i;
		const char *says;
	} why[] = {{1, "private key"}, {4, "unknown key type 'ssh-dss'"}, {3, "another type"}};
	for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++) {
		struct sl_diag d;
		assert_int_equal(ssh_pubkey_parse(bad[why[i].i], &k, NULL, 0, &d), SL_EINVAL);
		assert_non_null(strstr(d.msg, why[i].says));
	}
}

int main(void)
{
	if (sodium_init() < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepts),
		cmocka_unit_test(test_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
