/* cmd_fleet.c - `suanli fleet check FILE`: validate a fleet file and summarise it
 * (`fleet import-slurm` is in cmd_fleet_slurm.c). */
#include <getopt.h>
#include <jansson.h>
#include <string.h>

#include "catalog.h"
#include "cli.h"

static const char fleet_help[] =
	"usage: suanli fleet check FILE [--json]\n"
	"       suanli fleet import-slurm --slurm-conf FILE [...]  (see its --help)\n\n"
	"Validates a fleet file (see docs/fleet-file.md) and prints a summary: sites,\n"
	"regions, fabrics, leaf switches, NVLink domains, nodes, and GPUs by model.\n"
	"Errors name the file, line and column and say what was expected; the exit\n"
	"status is 0 for a valid file, 1 otherwise.\n\n"
	"  --json   print the summary as JSON\n";

static json_t *summary_json(const struct fleet *f, const struct fleet_summary *s)
{
	json_t *models = json_object(), *types = json_object();
	for (size_t i = 0; i < catalog_gpu_count() && i < 64; i++)
		if (s->gpus_by_model[i])
			json_object_set_new(models, catalog_gpu_at(i)->name,
					    json_integer(s->gpus_by_model[i]));
	for (int i = 0; i < f->ntypes; i++)
		if (s->nodes_by_type[i])
			json_object_set_new(types, f->types[i].name, json_integer(s->nodes_by_type[i]));
	return json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:o, s:o}", "sites", s->sites,
			 "regions", s->regions, "fabrics", s->fabrics, "leaves", s->leaves,
			 "nvlink_domains", s->domains, "nodes", s->nodes, "gpus", s->gpus,
			 "owners", s->owners, "gpus_by_model", models, "nodes_by_type", types);
}

static void summary_print(const char *path, const struct fleet *f, const struct fleet_summary *s)
{
	printf("%s: valid\n", path);
	printf("  %d site%s in %d region%s, %d fabric%s, %d leaf switch%s, %d NVLink domain%s\n",
	       s->sites, s->sites == 1 ? "" : "s", s->regions, s->regions == 1 ? "" : "s",
	       s->fabrics, s->fabrics == 1 ? "" : "s", s->leaves, s->leaves == 1 ? "" : "es",
	       s->domains, s->domains == 1 ? "" : "s");
	printf("  %d node%s, %d GPU%s", s->nodes, s->nodes == 1 ? "" : "s", s->gpus,
	       s->gpus == 1 ? "" : "s");
	if (s->owners)
		printf(", %d colocating tenant%s", s->owners, s->owners == 1 ? "" : "s");
	printf("\n\n  %-14s %6s\n", "MODEL", "GPUS");
	for (size_t i = 0; i < catalog_gpu_count() && i < 64; i++)
		if (s->gpus_by_model[i])
			printf("  %-14s %6d\n", catalog_gpu_at(i)->name, s->gpus_by_model[i]);
	printf("\n  %-22s %6s\n", "NODE TYPE", "NODES");
	for (int i = 0; i < f->ntypes; i++)
		if (s->nodes_by_type[i])
			printf("  %-22s %6d\n", f->types[i].name, s->nodes_by_type[i]);
	printf("\n  %-16s %-10s\n", "SITE", "REGION");
	for (int i = 0; i < f->nsites; i++)
		printf("  %-16s %-10s\n", f->sites[i].name, f->sites[i].region);
}

int cmd_fleet(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};
	int json = 0, c;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(fleet_help, stdout);
		return CLI_EXIT_OK;
	}
	if (argc >= 2 && !strcmp(argv[1], "import-slurm"))
		return cmd_fleet_import_slurm(argc - 1, argv + 1);
	if (argc < 2 || strcmp(argv[1], "check"))
		return cli_usage_error("fleet", "expected 'fleet check FILE' or 'fleet import-slurm ...'");
	argc--;
	argv++;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'j')
			json = 1;
		else if (c == 'h') {
			fputs(fleet_help, stdout);
			return CLI_EXIT_OK;
		} else
			return cli_usage_error("fleet", "unknown option");
	}
	if (optind != argc - 1)
		return cli_usage_error("fleet", "expected exactly one fleet file");

	struct fleet f;
	struct fleet_summary s;
	if (!cli_load_fleet(argv[optind], &f))
		return CLI_EXIT_FAIL;
	fleet_summarize(&f, &s);
	if (json) {
		json_t *o = summary_json(&f, &s);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		summary_print(argv[optind], &f, &s);
	}
	fleet_release(&f);
	return CLI_EXIT_OK;
}
