/* fuzz_route_json.c - request bodies of the lease routes (lease_req_parse,
 * POST /v1/leases and friends) and stored rows read back at start
 * (token_from_json, tenant_from_json, resv_from_json); the first byte picks
 * which. Everything goes through the controller's JSON bounds first, as in
 * the daemon. */
#include <jansson.h>

#include "ctl_int.h"
#include "fuzz.h"
#include "json_limits.h"
#include "lease.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 18))
		return 0;
	uint8_t sel = data[0];
	data++, size--;
	if (json_check_limits((const char *)data, size, JSON_MAX_DEPTH, NULL) != SL_OK)
		return 0;
	json_t *o = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!o)
		return 0;
	struct sl_diag d;
	sl_diag_clear(&d);
	enum sl_err e = SL_OK;
	switch (sel % 4) {
	case 0: {
		struct lease_req r;
		e = lease_req_parse(o, &r, &d);
		if (e == SL_OK)
			lease_req_drop(lease_req_keep(&r));
		break;
	}
	case 1: {
		struct ctl_token t;
		e = token_from_json(o, &t, &d);
		break;
	}
	case 2: {
		struct ctl_tenant t;
		memset(&t, 0, sizeof(t));
		e = tenant_from_json(o, &t, &d);
		json_decref(t.regions);
		json_decref(t.quotas);
		break;
	}
	default: {
		struct ctl_resv r;
		memset(&r, 0, sizeof(r));
		e = resv_from_json(o, &r, &d);
		json_decref(r.nodes);
		break;
	}
	}
	FUZZ_CHECK(e == SL_OK || d.msg[0]);
	json_decref(o);
	return 0;
}
