/* fuzz_topo_matrix.c - a pasted `nvidia-smi topo -m` matrix
 * (topo_parse_matrix): agents' --nvidia-smi-topo and fleet files. The first
 * byte gives the GPU count (1 + byte % 16) the type is made with. What parses
 * must format and parse again. */
#include "catalog.h"
#include "fuzz.h"
#include "topo.h"

#define FMT_MAX (64u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct node_type t;
	struct sl_diag d;
	if (size < 1 || size > (1u << 16))
		return 0;
	int n = 1 + data[0] % 16;
	const struct gpu_model *m = catalog_gpu_at(0);
	if (!m || topo_type_init(&t, "fuzz", m, n, 64, 512, NULL, NULL) != SL_OK)
		return 0;
	char *text = fuzz_text(data + 1, size - 1);
	sl_diag_clear(&d);
	enum sl_err e = topo_parse_matrix(&t, text, &d);
	FUZZ_CHECK(e == SL_OK || d.msg[0]);
	if (e == SL_OK) {
		char *fmt = malloc(FMT_MAX);
		struct node_type again;
		FUZZ_CHECK(fmt && topo_format_matrix(&t, fmt, FMT_MAX) < FMT_MAX);
		FUZZ_CHECK(topo_type_init(&again, "fuzz", m, n, 64, 512, NULL, NULL) == SL_OK);
		FUZZ_CHECK(topo_parse_matrix(&again, fmt, NULL) == SL_OK);
		free(fmt);
	}
	free(text);
	return 0;
}
