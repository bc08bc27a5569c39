/* cmd_topo.c - `suanli topo`: a node's GPU matrix in nvidia-smi style. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char topo_help[] =
	"usage: suanli topo --fleet FILE NODE\n"
	"       suanli topo --type TYPE [--fleet FILE]\n\n"
	"Prints the GPU matrix of a node (or a node type) in the style of\n"
	"`nvidia-smi topo -m` (NV# = bonded NVLinks, PIX, PHB, NODE, SYS, HCCS), its NIC\n"
	"rails and NUMA affinity, then the bandwidth of every GPU pair in GB/s.\n\n"
	"  --fleet FILE   the fleet file that declares the node\n"
	"  --type TYPE    a node type instead of a node (built-in, or from --fleet)\n";

int cmd_topo(int argc, char **argv)
{
	static const struct option opts[] = {{"fleet", required_argument, NULL, 'f'},
					      {"type", required_argument, NULL, 't'},
					      {"help", no_argument, NULL, 'h'},
					      {0, 0, 0, 0}};
	const char *fleet_path = NULL, *type_name = NULL;
	int c, rc = CLI_EXIT_OK;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': fleet_path = optarg; break;
		case 't': type_name = optarg; break;
		case 'h': fputs(topo_help, stdout); return CLI_EXIT_OK;
		default: return cli_usage_error("topo", "unknown option");
		}
	}
	if (!type_name && (!fleet_path || optind != argc - 1))
		return cli_usage_error("topo", "give --fleet FILE and one NODE, or --type TYPE");
	if (type_name && optind != argc)
		return cli_usage_error("topo", "--type takes no NODE argument");

	struct fleet f;
	if (fleet_path) {
		if (!cli_load_fleet(fleet_path, &f))
			return CLI_EXIT_FAIL;
	} else if (fleet_init(&f) != SL_OK) {
		fprintf(stderr, "suanli: out of memory\n");
		return CLI_EXIT_FAIL;
	}

	const struct node_type *t = NULL;
	if (type_name) {
		int ti = fleet_find_type(&f, type_name);
		if (ti < 0) {
			fprintf(stderr, "suanli: no node type '%s'\n  hint: built-in types are:", type_name);
			for (int i = 0; i < topo_builtin_count(); i++)
				fprintf(stderr, " %s", topo_builtin_name(i));
			fputc('\n', stderr);
			rc = CLI_EXIT_FAIL;
		} else {
			t = &f.types[ti];
			printf("Node type %s: %d x %s, %d CPU cores, %d GiB memory\n\n", t->name,
			       t->ngpus, t->gpu->name, t->cpus, t->mem_gib);
		}
	} else {
		int ni = fleet_find_node(&f, argv[optind]);
		if (ni < 0) {
			fprintf(stderr, "suanli: no node '%s' in %s\n  hint: 'suanli fleet check %s' lists the fleet\n",
				argv[optind], fleet_path, fleet_path);
			rc = CLI_EXIT_FAIL;
		} else {
			const struct fleet_node *n = &f.nodes[ni];
			t = fleet_node_type(&f, ni);
			printf("Node %s: %s (%d x %s), site %s (%s), leaf %s", n->name, t->name,
			       t->ngpus, t->gpu->name, f.sites[n->site].name,
			       f.sites[n->site].region, f.leaves[n->leaf].name);
			if (n->domain >= 0)
				printf(", NVLink domain %s", f.domains[n->domain].name);
			printf("\n\n");
		}
	}
	if (t) {
		size_t need = topo_format_matrix(t, NULL, 0);
		char *buf = malloc(need + 1);
		if (!buf) {
			fprintf(stderr, "suanli: out of memory\n");
			rc = CLI_EXIT_FAIL;
		} else {
			topo_format_matrix(t, buf, need + 1);
			fputs(buf, stdout);
			free(buf);
		}
	}
	fleet_release(&f);
	return rc;
}
