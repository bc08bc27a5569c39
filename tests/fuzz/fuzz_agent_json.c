/* fuzz_agent_json.c - what agents send: the register body's discovery
 * (discovery_from_json) after the controller's JSON bounds
 * (json_check_limits), as the heartbeat and work-report bodies go through
 * the same bounds first. What is accepted must survive a to_json round
 * trip. */
#include <jansson.h>

#include "discovery.h"
#include "fuzz.h"
#include "json_limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1u << 18))
		return 0;
	if (json_check_limits((const char *)data, size, JSON_MAX_DEPTH, NULL) != SL_OK)
		return 0;
	json_t *o = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!o)
		return 0;
	struct discovery *disc = calloc(1, sizeof(*disc));
	struct sl_diag d;
	sl_diag_clear(&d);
	if (disc && discovery_from_json(o, disc, &d) == SL_OK) {
		json_t *back = discovery_to_json(disc);
		struct discovery *again = calloc(1, sizeof(*again));
		FUZZ_CHECK(back && again && discovery_from_json(back, again, NULL) == SL_OK);
		json_decref(back);
		free(again);
	} else if (disc) {
		FUZZ_CHECK(d.msg[0]);
	}
	free(disc);
	json_decref(o);
	return 0;
}
