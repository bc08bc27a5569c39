/* cmd_queue.c - `suanli queue` and `suanli reservation create|list`: what
 * waits for capacity, and capacity set aside for one tenant. Both are about
 * the scheduler's plans rather than about what runs now. */
#include <string.h>
#include <time.h>

#include "cli.h"
#include "client.h"
#include "output.h"

/* ---- queue ---- */

static const char queue_help[] =
	"usage: suanli queue [OPTIONS]\n\n"
	"Lists the leases waiting for capacity, in the order they will be tried, with\n"
	"the reason each one waits. A tenant sees its own entries; others' count in\n"
	"the positions.\n\n" CLIENT_HELP_OPTS "\nExample:\n  suanli queue\n";

static void queue_row(struct out_table *t, const json_t *e, const void *ctx)
{
	char pos[32], gpus[32], age[32];
	out_age(out_str(e, "submitted_at", NULL), *(const time_t *)ctx, age, sizeof(age));
	const char *row[] = {out_int(e, "position", pos, sizeof(pos)),
			     out_str(e, "lease", "-"), out_str(e, "tenant", "-"),
			     out_str(e, "plan", "-"), out_int(e, "gpus", gpus, sizeof(gpus)),
			     age, out_str(e, "reason", "-")};
	out_table_row(t, row);
}

int cmd_queue(int argc, char **argv)
{
	static const char *const head[] = {"POS", "LEASE", "TENANT", "PLAN",
					   "GPUS", "WAITING", "REASON"};
	struct client cl;
	time_t now = time(NULL);
	json_t *arr;
	int rc;

	client_init(&cl, "queue");
	if ((rc = client_args(&cl, argc, argv, queue_help, 0, "no arguments")) != CLIENT_GO ||
	    (rc = client_get_list(&cl, "/v1/queue", "The queue is empty.\n", &arr)) != CLIENT_GO)
		return rc;
	rc = out_table_list(stdout, 7, head, arr, queue_row, &now) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	json_decref(arr);
	return rc;
}

/* ---- reservation create ---- */

static const char create_help[] =
	"usage: suanli reservation create --tenant T --nodes NODES --start TIME --end TIME\n"
	"                                 [OPTIONS]\n\n"
	"Sets nodes aside for one tenant between two instants: only that tenant's\n"
	"leases are placed on them in the window. Admin and operator.\n\n"
	"  --tenant T         the tenant\n"
	"  --nodes NODES      node names or a range, as fza-h100-[001-004]\n"
	"  --start TIME       RFC 3339, as 2026-12-01T00:00:00Z\n"
	"  --end TIME         RFC 3339, after --start\n" CLIENT_HELP_OPTS
	"\nExample:\n"
	"  suanli reservation create --tenant acme --nodes 'fza-h100-[001-004]' \\\n"
	"      --start 2026-12-01T00:00:00Z --end 2026-12-02T00:00:00Z\n";

/* Prints "Reservation rsv-1 holds a, b for acme from S to E." */
static void print_reservation(const json_t *r)
{
	char nodes[2048];
	out_join(json_object_get(r, "nodes"), ", ", nodes, sizeof(nodes));
	printf("Reservation %s holds %s for %s from %s to %s.\n", out_str(r, "id", "?"), nodes,
	       out_str(r, "tenant", "?"), out_str(r, "start", "?"), out_str(r, "end", "?"));
}

static int reservation_create(int argc, char **argv)
{
	static const struct option opts[] = {{"tenant", required_argument, NULL, 't'},
					     {"nodes", required_argument, NULL, 'n'},
					     {"start", required_argument, NULL, 's'},
					     {"end", required_argument, NULL, 'e'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	struct client cl;
	const char *tenant = NULL, *nodes = NULL, *start = NULL, *end = NULL;
	json_t *body, *r = NULL;
	int c, rc;

	client_init(&cl, "reservation create");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(create_help, stdout); return CLI_EXIT_OK;
		case 't': tenant = optarg; break;
		case 'n': nodes = optarg; break;
		case 's': start = optarg; break;
		case 'e': end = optarg; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	if (!tenant || !nodes || !start || !end)
		return cli_usage_error(cl.cmd, "--tenant, --nodes, --start and --end are required");
	if (out_parse_time(start) == (time_t)-1 || out_parse_time(end) == (time_t)-1)
		return cli_usage_error(cl.cmd, "--start and --end are RFC 3339 UTC times, as "
					       "2026-12-01T00:00:00Z");
	body = json_pack("{s:s,s:s,s:s,s:s}", "tenant", tenant, "nodes", nodes, "start", start,
			 "end", end);
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, "POST", "/v1/reservations", body, NULL, &r)) == CLI_EXIT_OK &&
	    r)
		print_reservation(r);
	json_decref(r);
	json_decref(body);
	client_close(&cl);
	return rc;
}

/* ---- reservation list ---- */

static const char list_help[] =
	"usage: suanli reservation list [OPTIONS]\n\n"
	"Lists reservations (a tenant sees its own).\n\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli reservation list --json\n";

static void reservation_row(struct out_table *t, const json_t *r, const void *ctx)
{
	char nodes[2048];
	(void)ctx;
	out_join(json_object_get(r, "nodes"), ",", nodes, sizeof(nodes));
	const char *row[] = {out_str(r, "id", "?"), out_str(r, "tenant", "-"), nodes,
			     out_str(r, "start", "-"), out_str(r, "end", "-")};
	out_table_row(t, row);
}

static int reservation_list(int argc, char **argv)
{
	static const char *const head[] = {"ID", "TENANT", "NODES", "START", "END"};
	struct client cl;
	json_t *arr;
	int rc;

	client_init(&cl, "reservation list");
	if ((rc = client_args(&cl, argc, argv, list_help, 0, "no arguments")) != CLIENT_GO ||
	    (rc = client_get_list(&cl, "/v1/reservations", "No reservations.\n", &arr)) !=
		    CLIENT_GO)
		return rc;
	rc = out_table_list(stdout, 5, head, arr, reservation_row, NULL) ? CLI_EXIT_FAIL
									  : CLI_EXIT_OK;
	json_decref(arr);
	return rc;
}

static const struct client_sub reservation_subs[] = {
	{"create", reservation_create, "set nodes aside for a tenant between two times"},
	{"list", reservation_list, "list reservations"},
};

int cmd_reservation(int argc, char **argv)
{
	return client_dispatch("reservation",
			       "Reservations: capacity held for one tenant between two instants.\n",
			       reservation_subs,
			       sizeof(reservation_subs) / sizeof(reservation_subs[0]), argc, argv);
}
