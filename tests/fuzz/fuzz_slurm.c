/* fuzz_slurm.c - the Slurm-style inputs of `suanli fleet import-slurm`
 * (slurm_import: slurm.conf, gres.conf, topology.conf; docs/migrate.md).
 *
 * The first byte picks what the rest is (low two bits) and which of the
 * CLI's --site/--region/--fabric-* options are given (the next bits):
 *   0: slurm.conf alone;
 *   1: gres.conf, beside a fixed slurm.conf of GPU nodes;
 *   2: topology.conf, beside the same slurm.conf;
 *   3: all three, separated by lines "%%" (slurm.conf %% gres.conf %% topology.conf).
 * Contracts: an error says what was wrong; every note names its file and says
 * something; a translation that succeeds is a fleet file that loads
 * (fleet_load_yaml), with as many nodes as the import counted - the round
 * trip of the import.
 *
 * libFuzzer's -timeout is wall-clock: on a busy shared machine a niced run
 * saw an input of 0.07 CPU-seconds pass 10 s, so this one allows more.
 *
 * fuzz-flags: -timeout=120
 */
#include <stdbool.h>

#include "fleet.h"
#include "fuzz.h"
#include "slurm_import.h"

/* GPU nodes the gres.conf and topology.conf inputs can refer to. */
static const char fixed_slurm[] =
	"ClusterName=pod7\n"
	"GresTypes=gpu\n"
	"NodeName=DEFAULT Gres=gpu:nvidia_h200:8 Sockets=2 CoresPerSocket=56 ThreadsPerCore=1 "
	"RealMemory=2063000\n"
	"NodeName=h200-[001-008]\n"
	"NodeName=nvl[01-04] Gres=gpu:h100nvl:8 CPUs=128 RealMemory=1031000\n"
	"NodeName=r1-t[01-04] Gres=gpu:gb200:4 CPUs=144 RealMemory=884000\n";

/* The text up to the next line "%%" (or the end) becomes part; true when
 * such a line was found (*rest and *len then hold what follows it). */
static bool cut(const char **rest, size_t *len, struct slurm_text *part, const char *name)
{
	const char *s = *rest;
	size_t n = *len;
	part->name = name;
	part->text = s;
	part->len = n;
	for (size_t i = 0; i + 2 <= n; i++) {
		if ((i == 0 || s[i - 1] == '\n') && s[i] == '%' && s[i + 1] == '%' &&
		    (i + 2 == n || s[i + 2] == '\n')) {
			size_t skip = i + 2 < n ? i + 3 : i + 2;
			part->len = i;
			*rest = s + skip;
			*len = n - skip;
			return true;
		}
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 18))
		return 0;
	uint8_t sel = data[0];
	char *text = fuzz_text(data + 1, size - 1);
	size_t len = size - 1;
	struct slurm_input in;
	memset(&in, 0, sizeof(in));
	struct slurm_text fixed = {"slurm.conf", fixed_slurm, sizeof(fixed_slurm) - 1};
	struct slurm_text mine = {NULL, text, len};
	switch (sel & 3) {
	case 0:
		in.slurm = mine;
		in.slurm.name = "slurm.conf";
		break;
	case 1:
		in.slurm = fixed;
		in.gres = mine;
		in.gres.name = "gres.conf";
		break;
	case 2:
		in.slurm = fixed;
		in.topo = mine;
		in.topo.name = "topology.conf";
		break;
	default: {
		const char *rest = text;
		size_t n = len;
		if (cut(&rest, &n, &in.slurm, "slurm.conf") && cut(&rest, &n, &in.gres, "gres.conf"))
			(void)cut(&rest, &n, &in.topo, "topology.conf");
		break;
	}
	}
	if (sel & 4)
		in.site = "fuzhou-1";
	if (sel & 8)
		in.region = "cn-east";
	if (sel & 16) {
		in.fabric_kind = sel & 32 ? "roce" : "infiniband";
		in.fabric_gbps = sel & 64 ? 200 : 400;
	}

	struct slurm_result r;
	struct sl_diag d;
	sl_diag_clear(&d);
	enum sl_err e = slurm_import(&in, &r, &d);
	FUZZ_CHECK(e == SL_OK || d.msg[0]);
	FUZZ_CHECK(r.nnotes >= 0 && r.nnotes <= SLURM_MAX_NOTES && r.dropped_notes >= 0);
	for (int i = 0; i < r.nnotes; i++)
		FUZZ_CHECK(r.notes[i].file && r.notes[i].msg[0] && r.notes[i].line >= 0);
	if (e == SL_OK) {
		FUZZ_CHECK(r.yaml && strlen(r.yaml) == r.len && r.nodes > 0);
		FUZZ_CHECK(r.gpus >= r.nodes && r.custom_types <= r.types);
		/* The round trip: what the import wrote loads as a fleet file. */
		struct fleet f;
		FUZZ_CHECK(fleet_init(&f) == SL_OK);
		sl_diag_clear(&d);
		e = fleet_load_yaml(&f, r.yaml, r.len, "imported.yaml", &d);
		if (e != SL_OK)
			fprintf(stderr, "imported fleet does not load: %d:%d %s\n%s\n", d.line, d.col,
				d.msg, r.yaml);
		FUZZ_CHECK(e == SL_OK);
		FUZZ_CHECK(f.nnodes == r.nodes);
		fleet_release(&f);
	}
	slurm_result_release(&r);
	free(text);
	return 0;
}
