/* cmd_image.c - `suanli image add|list`: the operator's image catalog, the
 * podman references jobs run in (docs/isolation.md, "Images"). */
#include <string.h>

#include "cli.h"
#include "client.h"
#include "output.h"

static const char add_help[] =
	"usage: suanli image add NAME --ref REF [--default] [OPTIONS]\n\n"
	"Adds image NAME to the catalog (admin, operator), or replaces its reference.\n"
	"REF is a podman reference the nodes have (agents never pull from a registry).\n"
	"--default makes it the image of jobs and instances that name none.\n\n"
	"  --ref REF          the podman image reference\n"
	"  --default          the default image\n"
	"  --description T    one line a renter chooses by\n"
	"  --cuda V           the CUDA version inside, e.g. 12.4\n"
	"  --min-driver V     the NVIDIA driver it needs, e.g. 550.54.14: nodes with an\n"
	"                     older one are refused at placement\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli image add base --ref localhost/suanli/base:1c978e250f10dfcf --default\n";

static int image_add(int argc, char **argv)
{
	static const struct option opts[] = {{"ref", required_argument, NULL, 'r'},
					     {"default", no_argument, NULL, 'd'},
					     {"description", required_argument, NULL, 'D'},
					     {"cuda", required_argument, NULL, 'C'},
					     {"min-driver", required_argument, NULL, 'M'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	struct client cl;
	const char *ref = NULL, *desc = NULL, *cuda = NULL, *drv = NULL;
	int c, rc, dflt = 0;
	json_t *body, *ans = NULL;

	client_init(&cl, "image add");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(add_help, stdout); return CLI_EXIT_OK;
		case 'r': ref = optarg; break;
		case 'd': dflt = 1; break;
		case 'D': desc = optarg; break;
		case 'C': cuda = optarg; break;
		case 'M': drv = optarg; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind + 1 != argc)
		return cli_usage_error(cl.cmd, "give one image NAME");
	if (!ref)
		return cli_usage_error(cl.cmd, "--ref REF is required");
	body = json_pack("{s:s, s:s}", "name", argv[optind], "ref", ref);
	if (dflt)
		json_object_set_new(body, "default", json_true());
	if (desc)
		json_object_set_new(body, "description", json_string(desc));
	if (cuda)
		json_object_set_new(body, "cuda", json_string(cuda));
	if (drv)
		json_object_set_new(body, "min_driver", json_string(drv));
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", "/v1/images", body, NULL, &ans)) == CLI_EXIT_OK && ans)
		printf("Image %s is %s%s.\n", out_str(ans, "name", "?"), out_str(ans, "ref", "?"),
		       json_is_true(json_object_get(ans, "default")) ? " (the default)" : "");
	json_decref(ans);
	json_decref(body);
	client_close(&cl);
	return rc;
}

static const char list_help[] =
	"usage: suanli image list [OPTIONS]\n\n"
	"Lists the image catalog: names, references, which is the default.\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli image list\n";

static void image_row(struct out_table *tab, const json_t *im, const void *ctx)
{
	(void)ctx;
	const char *cuda = out_str(im, "cuda", ""), *drv = out_str(im, "min_driver", "");
	const char *row[] = {out_str(im, "name", "?"), out_str(im, "ref", "?"),
			     json_is_true(json_object_get(im, "default")) ? "yes" : "-",
			     cuda[0] ? cuda : "-", drv[0] ? drv : "-", out_str(im, "description", ""),
			     out_str(im, "created_at", "-")};
	out_table_row(tab, row);
}

static int image_list(int argc, char **argv)
{
	static const char *const head[] = {"NAME", "REF", "DEFAULT", "CUDA", "MIN DRIVER", "DESCRIPTION", "CREATED"};
	struct client cl;
	json_t *arr;
	int rc;

	client_init(&cl, "image list");
	if ((rc = client_args(&cl, argc, argv, list_help, 0, "no arguments")) != CLIENT_GO ||
	    (rc = client_get_list(&cl, "/v1/images", "No images.\n", &arr)) != CLIENT_GO)
		return rc;
	rc = out_table_list(stdout, 7, head, arr, image_row, NULL) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	json_decref(arr);
	return rc;
}

static const struct client_sub image_subs[] = {
	{"add", image_add, "add an image (or replace its reference)"},
	{"list", image_list, "list the catalog"},
};

int cmd_image(int argc, char **argv)
{
	return client_dispatch("image", "Images: what jobs run in (podman references on the nodes).\n",
			       image_subs, sizeof(image_subs) / sizeof(image_subs[0]), argc, argv);
}
