/* fuzz_audit.c - audit bytes read back from the store or an export: the
 * canonical entry (audit_entry_decode), checkpoint notes (checkpoint_parse)
 * and a tenant's chain check over entries. What decodes must encode to the
 * same bytes (one encoding per entry); what parses must format to the same
 * note. The first byte picks the parser. */
#include <sodium.h>

#include "audit.h"
#include "checkpoint.h"
#include "fuzz.h"
#include "tenant_chain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init) {
		if (sodium_init() < 0)
			abort();
		init = 1;
	}
	if (size < 1 || size > 8192)
		return 0;
	uint8_t sel = data[0];
	data++, size--;
	if (sel % 3 == 0) {
		struct audit_entry e;
		uint8_t again[AUDIT_ENCODED_MAX];
		size_t len;
		if (audit_entry_decode(data, size, &e, NULL) == SL_OK) {
			FUZZ_CHECK(audit_entry_encode(&e, again, sizeof(again), &len, NULL) == SL_OK);
			FUZZ_CHECK(len == size && !memcmp(again, data, size));
		}
	} else if (sel % 3 == 1) {
		struct checkpoint c;
		char again[CHECKPOINT_TEXT_MAX + 1];
		size_t len;
		if (checkpoint_parse((const char *)data, size, &c, NULL) == SL_OK) {
			FUZZ_CHECK(checkpoint_format(&c, again, sizeof(again), &len, NULL) == SL_OK);
			FUZZ_CHECK(len == size && !memcmp(again, data, size));
		}
	} else {
		/* entries of 2-byte length + bytes, as a tenant's export holds them */
		struct audit_tenant_check t;
		struct audit_tenant_report r;
		audit_tenant_check_init(&t, "acme", 1, 100);
		size_t off = 0;
		uint64_t seq = 1;
		while (off + 2 <= size) {
			size_t n = (size_t)data[off] << 8 | data[off + 1];
			off += 2;
			if (n > size - off)
				n = size - off;
			audit_tenant_add(&t, seq++, data + off, n);
			off += n;
		}
		enum sl_err e = audit_tenant_finish(&t, NULL, NULL, 0, 0, NULL, &r);
		FUZZ_CHECK(e == SL_OK || r.detail[0]);
	}
	return 0;
}
