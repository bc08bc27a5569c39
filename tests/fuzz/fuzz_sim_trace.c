/* fuzz_sim_trace.c - the CSV traces of `suanli sim` (sim_parse_nodes, _pods,
 * _jobs); the first byte picks the file kind. */
#include "fuzz.h"
#include "sim_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_diag d;
	if (size < 1 || size > (1u << 20))
		return 0;
	uint8_t sel = data[0];
	const char *text = (const char *)data + 1;
	size--;
	sl_diag_clear(&d);
	enum sl_err e;
	int n = 0;
	if (sel % 3 == 0) {
		struct sim_node *v = NULL;
		e = sim_parse_nodes(text, size, "fuzz.csv", &v, &n, &d);
		free(v);
	} else {
		struct sim_pod *v = NULL;
		e = sel % 3 == 1 ? sim_parse_pods(text, size, "fuzz.csv", &v, &n, &d)
				 : sim_parse_jobs(text, size, "fuzz.csv", &v, &n, &d);
		free(v);
	}
	FUZZ_CHECK(e == SL_OK || d.msg[0]);
	return 0;
}
