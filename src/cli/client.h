/* client.h - what the online subcommands share: finding the controller and
 * the token, calling the API, and reporting its errors the same way.
 *
 * Every online subcommand accepts --server URL, --token TOKEN, --json and
 * --help (CLIENT_LONG_OPTS); the server and token come from those flags, else
 * SUANLI_SERVER / SUANLI_TOKEN, else the config file
 * ($XDG_CONFIG_HOME or ~/.config)/suanli/config with lines `server = URL`
 * and `token = ...`, else the server defaults to CLIENT_DEFAULT_SERVER. */
#ifndef SL_CLI_CLIENT_H
#define SL_CLI_CLIENT_H

#include <getopt.h>
#include <jansson.h>

#include "http_client.h"

#define CLIENT_DEFAULT_SERVER "http://127.0.0.1:7400"
#define CLIENT_CONFIG_LINE_MAX 4096u /* longest config-file line */
#define CLIENT_CONFIG_MAX_LINES 1000 /* a config file is a few lines */
#define CLIENT_PATH_MAX 1024u        /* longest API path with its query */

/* getopt_long values of the shared options (outside the ASCII range that
 * short options use). */
enum {
	CLIENT_OPT_SERVER = 0x100,
	CLIENT_OPT_TOKEN,
	CLIENT_OPT_JSON,
	CLIENT_OPT_CA,
};

/* The shared entries of a subcommand's struct option table; 'h' is --help. */
#define CLIENT_LONG_OPTS                                             \
	{"server", required_argument, NULL, CLIENT_OPT_SERVER},      \
	{"token", required_argument, NULL, CLIENT_OPT_TOKEN},        \
	{"json", no_argument, NULL, CLIENT_OPT_JSON},                \
	{"ca", required_argument, NULL, CLIENT_OPT_CA},              \
	{"help", no_argument, NULL, 'h'}

/* The options text for --help, to append to each subcommand's usage. */
#define CLIENT_HELP_OPTS                                                        \
	"  --server URL       the controller (default: SUANLI_SERVER, the config\n" \
	"                     file, or " CLIENT_DEFAULT_SERVER ")\n"               \
	"  --token TOKEN      bearer token (default: SUANLI_TOKEN or the config)\n" \
	"  --ca FILE          the controller's CA (its DATA/tls/ca.pem) for https://\n" \
	"                     servers (default: SUANLI_CA, the config's 'ca')\n"     \
	"  --json             print the API's JSON answer\n"                       \
	"  --help             this text\n"

struct client {
	const char *cmd;    /* "lease create", for messages */
	const char *server; /* from --server, or NULL until client_open */
	const char *token;  /* from --token, or NULL until client_open */
	int json;           /* --json given */
	/* Owned: */
	struct http_client *http;
	const char *ca;     /* from --ca, or NULL until client_open */
	char *cfg_server, *cfg_token, *cfg_ca; /* values read from the config file */
	const char *token_from;       /* where the token came from, for hints */
};

/* Zeroes cl for subcommand cmd ("lease create"), then takes the options
 * given before the command (cli_global), which the subcommand's own may
 * override. */
void client_init(struct client *cl, const char *cmd);

/* Handles one getopt_long result c of the shared options; returns 1 if it
 * was one (recorded in cl), 0 otherwise. */
int client_opt(struct client *cl, int c, const char *arg);

/* Reports getopt_long's '?' or ':' for cmd as a usage error; returns
 * CLI_EXIT_USAGE. argv/optind locate the option that was wrong. */
int client_getopt_error(const char *cmd, int c, char **argv);

/* Resolves server and token (flags, environment, config file, default) and
 * creates the HTTP client. Prints the problem and returns CLI_EXIT_FAIL on
 * failure (an unreadable or malformed config file, a bad URL), else
 * CLI_EXIT_OK. Warns on stderr when the config file holds a token and others
 * may read it. */
int client_open(struct client *cl);

/* Sends method to path with body (borrowed; NULL for none) and
 * idempotency_key (NULL for none). On a 2xx answer: with --json prints the
 * answer's JSON (indented, values byte for byte as sent) to stdout and sets
 * *out to NULL; otherwise parses it into *out (caller json_decref's; NULL for
 * an empty body). Returns CLI_EXIT_OK, or CLI_EXIT_FAIL after printing the
 * server's message and hint (or the transport error) to stderr. */
int client_call(struct client *cl, const char *method, const char *path, json_t *body,
		const char *idempotency_key, json_t **out);

/* client_args' answer when the subcommand should go on. */
#define CLIENT_GO (-1)

/* Parses argv for a subcommand that takes only the shared options and
 * exactly npos positional arguments (described by what, "one lease ID"),
 * which are left at argv[optind...]. Returns CLIENT_GO to go on, or the exit
 * status (after printing help or a usage error). */
int client_args(struct client *cl, int argc, char **argv, const char *help, int npos,
		const char *what);

/* The list subcommands' common step: opens cl and GETs path, whose answer is
 * a JSON array. Returns CLIENT_GO with *arr the answer (caller json_decref's)
 * when there are rows to print; otherwise the exit status, after --json
 * printed the answer, empty (a whole line) was printed for an empty list, or
 * an error was reported, and *arr is NULL. Closes cl either way. */
int client_get_list(struct client *cl, const char *path, const char *empty, json_t **arr);
/* client_get_list for the paged routes (GET /v1/nodes, /v1/jobs): follows
 * every page (client_pages.c) and answers them as one array. */
int client_get_pages(struct client *cl, const char *path, const char *empty, json_t **arr);

/* One subcommand of a group ("lease create"). */
struct client_sub {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/* Runs the subcommand argv[1] of group (argv[0] is the group's name), or
 * prints the group's usage (intro, then the subcommands) for --help, or a
 * usage error for a missing or unknown one. Returns the exit status. */
int client_dispatch(const char *group, const char *intro, const struct client_sub *subs,
		    size_t nsubs, int argc, char **argv);

/* --watch (client_watch.c): with *seq 0, fetches where the controller's
 * event stream stands into *seq and returns at once; else waits (GET
 * /v1/events, long polls) until an event of one of kinds ("lease",
 * "node,lease") or a reset comes, printing a time line between lists.
 * CLI_EXIT_OK: print the list (again); CLI_EXIT_FAIL after printing the
 * error. cl must be open and stays so. */
int client_watch_wait(struct client *cl, const char *kinds, long long *seq);

/* Frees what client_open made; safe on an unopened client. */
void client_close(struct client *cl);

/* Sets obj[key] to the JSON list of the comma-separated names in s
 * ("a,b" -> ["a","b"]). An empty name, or more than max names (0: no bound),
 * is a usage error naming opt; returns -1 then, 0 otherwise. noun names the
 * entries in the "more than" message ("models"). */
int client_set_list(json_t *obj, const char *key, const char *cmd, const char *opt,
		    const char *s, size_t max, const char *noun);

/* Appends s to buf (of size n, holding a NUL-terminated string) with every
 * byte outside [A-Za-z0-9-._~] percent-encoded, so a name from the user is one
 * path segment or query value. Returns 0, or -1 if it does not fit. */
int client_escape(char *buf, size_t n, const char *s);
/* Appends "?key=value" (or "&key=value" when path already has a query),
 * value escaped; nothing when value is NULL. -1 if it does not fit. */
int client_query_add(char *path, size_t n, const char *key, const char *value);
/* path = base + "/" + escaped id + suffix ("/v1/jobs", "job-1", "/cancel").
 * A usage error saying id "is not <example>" and -1 when id is empty or too
 * long; 0 otherwise. */
int client_object_path(const char *cmd, const char *base, const char *id, const char *suffix,
		       const char *example, char *path, size_t n);

/* Parses a duration: whole numbers with units d, h, m, s, largest first and
 * each at most once ("90s", "30m", "2h", "1d", "1h30m"). Returns the seconds
 * (> 0, at most CLIENT_DURATION_MAX), or -1 after printing a usage error that
 * names opt. */
#define CLIENT_DURATION_MAX (3650L * 86400L) /* ten years */
long client_parse_duration(const char *cmd, const char *opt, const char *s);

#endif
