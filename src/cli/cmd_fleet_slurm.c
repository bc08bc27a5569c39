/* cmd_fleet_slurm.c - `suanli fleet import-slurm`: a Slurm site's slurm.conf,
 * gres.conf and topology.conf as a suanli fleet file (src/core/fleet/
 * slurm_import.h does the translating; this file reads, checks and writes). */
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "file.h"
#include "slurm_import.h"

static const char help[] =
	"usage: suanli fleet import-slurm --slurm-conf FILE [--gres-conf FILE]\n"
	"                                 [--topology-conf FILE] [--site NAME] [--region CODE]\n"
	"                                 [--fabric-kind infiniband|roce] [--fabric-gbps N]\n"
	"                                 [--output FILE] [--json]\n\n"
	"Writes a fleet file (docs/fleet-file.md) for a Slurm site: nodes from NodeName\n"
	"lines (Gres=gpu:TYPE:N, CPUs, RealMemory), node types from gres.conf's Links=\n"
	"or a matching built-in type, leaves and fabrics from topology.conf's switches,\n"
	"NVLink domains from its blocks. Everything not translated is listed on stderr\n"
	"with its file and line ('not translated'), as are the defaults taken ('note').\n"
	"The fleet file goes to stdout or --output, and is checked by loading it.\n"
	"See docs/migrate.md.\n\n"
	"  --site NAME          site name (default: ClusterName)\n"
	"  --region CODE        region code (default: unknown)\n"
	"  --fabric-kind KIND   infiniband (default) or roce\n"
	"  --fabric-gbps N      fabric link speed (default 400)\n"
	"  --json               print {\"fleet\", \"notes\", \"summary\"} instead\n";

static bool read_opt(const char *path, const char *max_name, struct slurm_text *t)
{
	struct sl_diag d;
	sl_diag_clear(&d);
	char *text = NULL;
	size_t len = 0;
	(void)max_name;
	if (sl_read_file(path, SLURM_MAX_FILE, &text, &len, &d)) {
		cli_print_diag(&d);
		return false;
	}
	t->name = path;
	t->text = text;
	t->len = len;
	return true;
}

int cmd_fleet_import_slurm(int argc, char **argv)
{
	static const struct option opts[] = {
		{"slurm-conf", required_argument, NULL, 's'},
		{"gres-conf", required_argument, NULL, 'g'},
		{"topology-conf", required_argument, NULL, 't'},
		{"site", required_argument, NULL, 'S'},
		{"region", required_argument, NULL, 'R'},
		{"fabric-kind", required_argument, NULL, 'k'},
		{"fabric-gbps", required_argument, NULL, 'b'},
		{"output", required_argument, NULL, 'o'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{0, 0, 0, 0}};
	const char *paths[3] = {NULL, NULL, NULL}, *out_path = NULL;
	struct slurm_input in;
	memset(&in, 0, sizeof(in));
	int json = 0, c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 's': paths[0] = optarg; break;
		case 'g': paths[1] = optarg; break;
		case 't': paths[2] = optarg; break;
		case 'S': in.site = optarg; break;
		case 'R': in.region = optarg; break;
		case 'k':
			if (strcmp(optarg, "infiniband") && strcmp(optarg, "roce"))
				return cli_usage_error("fleet", "--fabric-kind: infiniband or roce");
			in.fabric_kind = optarg;
			break;
		case 'b':
			in.fabric_gbps = atoi(optarg);
			if (in.fabric_gbps < 1 || in.fabric_gbps > 100000)
				return cli_usage_error("fleet", "--fabric-gbps: 1..100000");
			break;
		case 'o': out_path = optarg; break;
		case 'j': json = 1; break;
		case 'h': fputs(help, stdout); return CLI_EXIT_OK;
		default: return cli_usage_error("fleet", "unknown option");
		}
	}
	if (!paths[0] || optind != argc)
		return cli_usage_error("fleet", "import-slurm needs --slurm-conf FILE (and no other "
				       "arguments)");
	struct slurm_text *tx[3] = {&in.slurm, &in.gres, &in.topo};
	int rc = CLI_EXIT_FAIL;
	struct slurm_result r;
	memset(&r, 0, sizeof(r));
	for (int i = 0; i < 3; i++)
		if (paths[i] && !read_opt(paths[i], NULL, tx[i]))
			goto out;
	struct sl_diag d;
	sl_diag_clear(&d);
	enum sl_err e = slurm_import(&in, &r, &d);
	for (int i = 0; i < r.nnotes; i++) {
		const struct slurm_note *n = &r.notes[i];
		if (json)
			continue;
		char more[64] = "";
		if (n->more)
			snprintf(more, sizeof(more), " (and %d more node%s of this line)", n->more,
				 n->more == 1 ? "" : "s");
		if (n->line)
			fprintf(stderr, "%s:%d: %s: %s%s\n", n->file, n->line,
				n->untranslated ? "not translated" : "note", n->msg, more);
		else
			fprintf(stderr, "%s: %s: %s%s\n", n->file, n->untranslated ? "not translated" : "note",
				n->msg, more);
	}
	if (r.dropped_notes && !json)
		fprintf(stderr, "suanli: %d more notes not shown\n", r.dropped_notes);
	if (e) {
		cli_print_diag(&d);
		goto out;
	}
	/* The file must load: what the importer writes is checked by the parser
	 * the controller uses. */
	struct fleet f;
	if (fleet_init(&f)) {
		fprintf(stderr, "suanli: out of memory\n");
		goto out;
	}
	sl_diag_clear(&d);
	if (fleet_load_yaml(&f, r.yaml, r.len, "the imported fleet", &d)) {
		fprintf(stderr, "suanli: the written fleet does not load (a defect):\n");
		cli_print_diag(&d);
		fleet_release(&f);
		goto out;
	}
	struct fleet_summary s;
	fleet_summarize(&f, &s);
	fleet_release(&f);
	if (json) {
		json_t *notes = json_array();
		for (int i = 0; i < r.nnotes; i++)
			json_array_append_new(notes, json_pack("{s:s, s:i, s:b, s:s, s:i}", "file",
							       r.notes[i].file, "line", r.notes[i].line,
							       "untranslated", r.notes[i].untranslated,
							       "message", r.notes[i].msg, "more_nodes",
							       r.notes[i].more));
		json_t *o = json_pack("{s:s, s:o, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:i}}", "fleet", r.yaml,
				      "notes", notes, "summary", "nodes", s.nodes, "gpus", s.gpus,
				      "node_types", r.types, "custom_types", r.custom_types, "fabrics",
				      s.fabrics, "leaves", s.leaves, "nvlink_domains", s.domains);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else if (out_path) {
		FILE *fp = fopen(out_path, "w");
		if (!fp || fwrite(r.yaml, 1, r.len, fp) != r.len) {
			fprintf(stderr, "suanli: cannot write %s\n", out_path);
			if (fp)
				fclose(fp);
			goto out;
		}
		fclose(fp);
	} else {
		fwrite(r.yaml, 1, r.len, stdout);
	}
	int untranslated = 0;
	for (int i = 0; i < r.nnotes; i++)
		untranslated += r.notes[i].untranslated;
	if (!json)
		fprintf(stderr, "suanli: %d nodes, %d GPUs, %d node types (%d custom), %d fabrics, %d "
			"leaves, %d NVLink domains; %d items not translated%s%s\n", s.nodes, s.gpus,
			r.types, r.custom_types, s.fabrics, s.leaves, s.domains, untranslated,
			out_path ? "; written to " : "", out_path ? out_path : "");
	rc = CLI_EXIT_OK;
out:
	slurm_result_release(&r);
	for (int i = 0; i < 3; i++)
		free((char *)tx[i]->text);
	return rc;
}
