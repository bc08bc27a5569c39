/* fuzz_fleet_yaml.c - the fleet file (fleet_load_yaml): PUT /v1/fleet's
 * body and `suanlid serve --fleet`. An error always says where. */
#include "fleet.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet f;
	struct sl_diag d;
	if (size > (1u << 20) || fleet_init(&f) != SL_OK)
		return 0;
	sl_diag_clear(&d);
	enum sl_err e = fleet_load_yaml(&f, (const char *)data, size, "fuzz.yaml", &d);
	FUZZ_CHECK(e == SL_OK || d.msg[0]);
	fleet_release(&f);
	return 0;
}
