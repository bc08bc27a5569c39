/* cmd_audit.c - `suanli audit log|checkpoint|proof|consistency|verify|export`.
 *
 * The point of a tamper-evident log is that nobody has to trust the server:
 * so proof and consistency answers are re-checked here with the same core
 * verifiers an auditor would use (merkle.h), and `verify --offline` checks an
 * export with only the log's public key, without talking to anyone. The online
 * `verify` asks the controller to recompute the tree from its store, which
 * catches edits to the database; the offline one also catches a lying server.
 *
 * An export is JSON lines: {"type":"entry","seq","canonical"(base64),
 * "leaf_hash"(hex),...}, then {"type":"checkpoint","size","note"}, then
 * {"type":"key","origin","public_key","first_seq"} (docs/audit.md). */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "audit_verify.h"
#include "buf.h"
#include "checkpoint.h"
#include "cli.h"
#include "client.h"
#include "file.h"
#include "merkle.h"
#include "tenant_chain.h"
#include "output.h"

#define AUDIT_PUBKEY_FILE_MAX 4096    /* bound on a --pubkey file */
#define AUDIT_EXPORT_LINE_MAX (64u << 10) /* bound on one export line */
#define AUDIT_EXPORT_MAX_CPS 10000000 /* bound on checkpoints in an export */

static int need_sodium(void)
{
	if (sodium_init() < 0) {
		fprintf(stderr, "suanli: libsodium failed to initialise\n");
		return -1;
	}
	return 0;
}

static bool hex_to(const char *s, uint8_t *out, size_t n)
{
	size_t got = 0;
	return s && strlen(s) == 2 * n &&
	       sodium_hex2bin(out, n, s, 2 * n, NULL, &got, NULL) == 0 && got == n;
}

/* Reads a proof array of hex hashes. */
static bool proof_from(const json_t *arr, struct merkle_proof *p)
{
	size_t i;
	const json_t *h;
	if (!json_is_array(arr) || json_array_size(arr) > MERKLE_PROOF_MAX)
		return false;
	p->len = json_array_size(arr);
	json_array_foreach(arr, i, h)
		if (!hex_to(json_string_value(h), p->hash[i], MERKLE_HASH_SIZE))
			return false;
	return true;
}

/* ---- log ---- */

static const char log_help[] =
	"usage: suanli audit log [--tenant T] [--since SEQ] [--action A] [--limit N] [OPTIONS]\n\n"
	"Lists audit entries in order: who (token id and role) did what (action,\n"
	"target) for which tenant, and how it ended (ok, denied, invalid, ...).\n"
	"Auditors, admins and operators see every tenant; tenant roles their own.\n\n"
	"  --tenant T         only this tenant's entries\n"
	"  --since SEQ        only entries after SEQ\n"
	"  --action A         only this action (lease.create, token.revoke, ...)\n"
	"  --limit N          at most N entries (default 1000)\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli audit log --tenant acme --action lease.create\n";

/* An empty field prints as "-", like an absent one. */
static void audit_row(struct out_table *tab, const json_t *e, const void *ctx)
{
	char seq[24];
	(void)ctx;
	const char *row[] = {out_int(e, "seq", seq, sizeof(seq)), out_str(e, "time", "-"),
			     out_str(e, "actor", "-"), out_str(e, "role", "-"),
			     out_str(e, "tenant", "-"), out_str(e, "action", "-"),
			     out_str(e, "target", "-"), out_str(e, "outcome", out_str(e, "error", "-"))};
	for (int k = 0; k < 8; k++)
		if (!row[k][0])
			row[k] = "-";
	out_table_row(tab, row);
}

static int audit_log(int argc, char **argv)
{
	static const struct option opts[] = {{"tenant", required_argument, NULL, 't'},
					     {"since", required_argument, NULL, 's'},
					     {"action", required_argument, NULL, 'a'},
					     {"limit", required_argument, NULL, 'n'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	static const char *const head[] = {"SEQ", "TIME", "ACTOR", "ROLE", "TENANT",
					   "ACTION", "TARGET", "OUTCOME"};
	struct client cl;
	const char *tenant = NULL, *action = NULL;
	long since = -1, limit = -1;
	char path[CLIENT_PATH_MAX] = "/v1/audit/log";
	json_t *arr;
	int c, rc;

	client_init(&cl, "audit log");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(log_help, stdout); return CLI_EXIT_OK;
		case 't': tenant = optarg; break;
		case 'a': action = optarg; break;
		case 's':
			if ((since = cli_parse_int(cl.cmd, "--since", optarg, 0, 0x7fffffffffffffffL)) < 0)
				return CLI_EXIT_USAGE;
			break;
		case 'n':
			if ((limit = cli_parse_int(cl.cmd, "--limit", optarg, 1, 100000)) < 0)
				return CLI_EXIT_USAGE;
			break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	char since_s[24], limit_s[24];
	snprintf(since_s, sizeof(since_s), "%ld", since);
	snprintf(limit_s, sizeof(limit_s), "%ld", limit);
	if (client_query_add(path, sizeof(path), "tenant", tenant) ||
	    client_query_add(path, sizeof(path), "action", action) ||
	    client_query_add(path, sizeof(path), "since", since >= 0 ? since_s : NULL) ||
	    client_query_add(path, sizeof(path), "limit", limit > 0 ? limit_s : NULL))
		return cli_usage_error(cl.cmd, "--tenant or --action is too long");
	if ((rc = client_get_list(&cl, path, "No audit entries.\n", &arr)) != CLIENT_GO)
		return rc;
	rc = out_table_list(stdout, 8, head, arr, audit_row, NULL) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	json_decref(arr);
	return rc;
}

/* ---- checkpoint ---- */

static const char checkpoint_help[] =
	"usage: suanli audit checkpoint [--latest] [OPTIONS]\n\n"
	"Has the controller sign a checkpoint of the log now (admin, operator), or\n"
	"with --latest shows the newest one. A checkpoint names the log's size and\n"
	"Merkle root, signed with the controller's Ed25519 key; keep copies to\n"
	"prove later that the log only grew.\n\n"
	"  --latest           show the newest checkpoint instead\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli audit checkpoint\n";

static int audit_checkpoint(int argc, char **argv)
{
	static const struct option opts[] = {{"latest", no_argument, NULL, 'l'}, CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	struct client cl;
	json_t *ans = NULL, *body = NULL;
	int c, rc, latest = 0;

	client_init(&cl, "audit checkpoint");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(checkpoint_help, stdout); return CLI_EXIT_OK;
		case 'l': latest = 1; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	body = latest ? NULL : json_object();
	if ((rc = client_open(&cl)) == CLI_EXIT_OK &&
	    (rc = client_call(&cl, latest ? "GET" : "POST", "/v1/audit/checkpoint", body, NULL,
			      &ans)) == CLI_EXIT_OK && ans) {
		char size[24];
		printf("Checkpoint of %s at size %s, root %s, %s.\n%s", out_str(ans, "origin", "?"),
		       out_int(ans, "size", size, sizeof(size)), out_str(ans, "root", "?"),
		       out_str(ans, "time", "?"), out_str(ans, "note", ""));
	}
	json_decref(ans);
	json_decref(body);
	client_close(&cl);
	return rc;
}

/* ---- proof, consistency ---- */

static const char proof_help[] =
	"usage: suanli audit proof --seq N [--size S] [OPTIONS]\n\n"
	"Fetches an inclusion proof that entry N is in the log's tree of S entries\n"
	"(default: the newest checkpoint's size, or the whole log), and checks it\n"
	"here against the tree's root.\n\n"
	"  --seq N            the entry\n"
	"  --size S           the tree size to prove it in\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli audit proof --seq 42\n";

static const char consistency_help[] =
	"usage: suanli audit consistency --from SIZE [--to SIZE] [OPTIONS]\n\n"
	"Fetches a consistency proof that the log of --from entries is a prefix of\n"
	"the log of --to entries (default: the newest checkpoint's size, or the\n"
	"whole log), and checks it here: the log only grew; nothing was rewritten.\n\n"
	"  --from SIZE        the older size (e.g. of a checkpoint you kept)\n"
	"  --to SIZE          the newer size\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli audit consistency --from 1000\n";

/* Parses --seq/--size or --from/--to for proof (consistency == 0) or
 * consistency. */
static int proof_cmd(int argc, char **argv, int consistency)
{
	static const struct option popts[] = {{"seq", required_argument, NULL, 'a'},
					      {"size", required_argument, NULL, 'b'},
					      CLIENT_LONG_OPTS,
					      {0, 0, 0, 0}};
	static const struct option copts[] = {{"from", required_argument, NULL, 'a'},
					      {"to", required_argument, NULL, 'b'},
					      CLIENT_LONG_OPTS,
					      {0, 0, 0, 0}};
	const char *na = consistency ? "--from" : "--seq", *nb = consistency ? "--to" : "--size";
	struct client cl;
	long a = -1, b = -1;
	json_t *ans = NULL;
	int c, rc;
	char path[CLIENT_PATH_MAX];
	struct merkle_proof p;
	struct sl_diag d;

	client_init(&cl, consistency ? "audit consistency" : "audit proof");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", consistency ? copts : popts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(consistency ? consistency_help : proof_help, stdout); return CLI_EXIT_OK;
		case 'a':
			if ((a = cli_parse_int(cl.cmd, na, optarg, consistency ? 0 : 1, 0x7fffffffffffffffL)) < 0)
				return CLI_EXIT_USAGE;
			break;
		case 'b':
			if ((b = cli_parse_int(cl.cmd, nb, optarg, 0, 0x7fffffffffffffffL)) < 0)
				return CLI_EXIT_USAGE;
			break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	if (a < 0)
		return cli_usage_error(cl.cmd, "%s is required", consistency ? "--from SIZE" : "--seq N");
	snprintf(path, sizeof(path), consistency ? "/v1/audit/consistency?from=%ld" : "/v1/audit/proof?seq=%ld", a);
	if (b >= 0)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), consistency ? "&to=%ld" : "&size=%ld", b);
	if (need_sodium() || (rc = client_open(&cl)) != CLI_EXIT_OK)
		return CLI_EXIT_FAIL;
	/* Check the proof even with --json: print it, then say whether it held. */
	int json = cl.json;
	cl.json = 0;
	if ((rc = client_call(&cl, "GET", path, NULL, NULL, &ans)) != CLI_EXIT_OK)
		goto done;
	if (json) {
		char *s = json_dumps(ans, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		if (s)
			puts(s);
		free(s);
	}
	sl_diag_clear(&d);
	rc = CLI_EXIT_FAIL;
	if (!proof_from(json_object_get(ans, "proof"), &p)) {
		fprintf(stderr, "suanli: the controller's proof is malformed\n");
		goto done;
	}
	if (consistency) {
		uint8_t r1[MERKLE_HASH_SIZE], r2[MERKLE_HASH_SIZE];
		uint64_t from = (uint64_t)json_integer_value(json_object_get(ans, "from"));
		uint64_t to = (uint64_t)json_integer_value(json_object_get(ans, "to"));
		if (!hex_to(out_str(ans, "from_root", ""), r1, sizeof(r1)) ||
		    !hex_to(out_str(ans, "to_root", ""), r2, sizeof(r2))) {
			fprintf(stderr, "suanli: the controller's roots are malformed\n");
			goto done;
		}
		if (merkle_consistency_verify(from, to, r1, r2, &p, &d)) {
			fprintf(stderr, "suanli: consistency proof from %llu to %llu does NOT hold: %s\n",
				(unsigned long long)from, (unsigned long long)to, d.msg);
			goto done;
		}
		if (!json)
			printf("The log of %llu entries (root %s) is a prefix of the log of %llu entries\n"
			       "(root %s): consistency proof of %zu hashes verified.\n",
			       (unsigned long long)from, out_str(ans, "from_root", "?"),
			       (unsigned long long)to, out_str(ans, "to_root", "?"), p.len);
	} else {
		const json_t *entry = json_object_get(ans, "entry");
		const char *b64 = out_str(entry, "canonical", "");
		uint8_t bytes[AUDIT_ENCODED_MAX], leaf[MERKLE_HASH_SIZE], root[MERKLE_HASH_SIZE];
		size_t len = 0;
		uint64_t index = (uint64_t)json_integer_value(json_object_get(ans, "index"));
		uint64_t size = (uint64_t)json_integer_value(json_object_get(ans, "size"));
		if (sodium_base642bin(bytes, sizeof(bytes), b64, strlen(b64), NULL, &len, NULL,
				      sodium_base64_VARIANT_ORIGINAL) ||
		    !hex_to(out_str(ans, "root", ""), root, sizeof(root))) {
			fprintf(stderr, "suanli: the controller's entry or root is malformed\n");
			goto done;
		}
		audit_leaf_hash(bytes, len, leaf);
		if (merkle_inclusion_verify(leaf, index, size, &p, root, &d)) {
			fprintf(stderr, "suanli: inclusion proof of entry %ld does NOT hold: %s\n", a, d.msg);
			goto done;
		}
		if (!json)
			printf("Entry %ld (%s %s by %s: %s) is in the log of %llu entries (root %s):\n"
			       "inclusion proof of %zu hashes verified.\n",
			       a, out_str(entry, "action", "?"), out_str(entry, "target", "-"),
			       out_str(entry, "actor", "?"), out_str(entry, "outcome", "?"),
			       (unsigned long long)size, out_str(ans, "root", "?"), p.len);
	}
	if (!json && json_is_string(json_object_get(ans, "checkpoint")))
		printf("That size has a signed checkpoint:\n%s", out_str(ans, "checkpoint", ""));
	rc = CLI_EXIT_OK;
done:
	json_decref(ans);
	client_close(&cl);
	return rc;
}

static int audit_proof(int argc, char **argv)
{
	return proof_cmd(argc, argv, 0);
}

static int audit_consistency(int argc, char **argv)
{
	return proof_cmd(argc, argv, 1);
}

/* ---- verify ---- */

static const char verify_help[] =
	"usage: suanli audit verify [OPTIONS]\n"
	"       suanli audit verify --tenant T [--pubkey KEY] [OPTIONS]\n"
	"       suanli audit verify --offline --export FILE --pubkey KEY [--checkpoint NOTE] [--tenant T]\n\n"
	"Checks the whole audit log: every entry's bytes and hash, that none is\n"
	"missing or out of order, and that every checkpoint is signed by the log's\n"
	"key and matches the entries it covers. Online, the controller recomputes\n"
	"the tree from its store (admin, operator, auditor). Offline, an export\n"
	"(suanli audit export) is checked here against the public key alone\n"
	"(DATA/audit.pub, or its base64 text). Exits 0 when the log is intact;\n"
	"otherwise 1, printing 'first bad entry: SEQ' and what was wrong.\n\n"
	"  --offline          check an export file without the controller\n"
	"  --export FILE      the export to check\n"
	"  --pubkey KEY       the log's public key: a file or base64\n"
	"  --checkpoint NOTE  a checkpoint note kept from earlier (a file): the log\n"
	"                     must still contain what it vouched for\n"
	"  --tenant T         a tenant's own entries (its export): each one genuine,\n"
	"                     and none missing (each links to the tenant's previous\n"
	"                     entry; the signed checkpoint names the newest)\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli audit verify --offline --export audit.jsonl --pubkey audit.pub\n";

static void print_verdict(bool ok, uint64_t entries, uint64_t cps, const char *fault,
			  uint64_t seq, const char *detail)
{
	if (ok) {
		printf("Audit log intact: %llu entries, %llu checkpoint(s) verified.\n",
		       (unsigned long long)entries, (unsigned long long)cps);
		return;
	}
	printf("Audit log NOT intact.\nfirst bad entry: %llu\nfault: %s\ndetail: %s\n",
	       (unsigned long long)seq, fault, detail);
}

static int verify_online(struct client *cl)
{
	json_t *ans = NULL;
	int json = cl->json, rc;
	cl->json = 0;
	if ((rc = client_open(cl)) != CLI_EXIT_OK ||
	    (rc = client_call(cl, "GET", "/v1/audit/verify", NULL, NULL, &ans)) != CLI_EXIT_OK)
		goto done;
	bool ok = json_is_true(json_object_get(ans, "ok"));
	if (json) {
		char *s = json_dumps(ans, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		if (s)
			puts(s);
		free(s);
	} else {
		print_verdict(ok, (uint64_t)json_integer_value(json_object_get(ans, "entries")),
			      (uint64_t)json_integer_value(json_object_get(ans, "checkpoints")),
			      out_str(ans, "fault", "?"),
			      (uint64_t)json_integer_value(json_object_get(ans, "first_bad_seq")),
			      out_str(ans, "detail", ""));
	}
	rc = ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
done:
	json_decref(ans);
	client_close(cl);
	return rc;
}

static int load_pubkey(const char *arg, uint8_t pk[CHECKPOINT_PUBKEY_SIZE])
{
	char *text = NULL;
	size_t len = 0, got = 0;
	struct sl_diag d;
	sl_diag_clear(&d);
	const char *s = arg;
	FILE *f = fopen(arg, "r");
	if (f) {
		fclose(f);
		if (sl_read_file(arg, AUDIT_PUBKEY_FILE_MAX, &text, &len, &d)) {
			cli_print_diag(&d);
			return -1;
		}
		s = text;
	}
	len = strlen(s);
	while (len && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' '))
		len--;
	int rc = sodium_base642bin(pk, CHECKPOINT_PUBKEY_SIZE, s, len, NULL, &got, NULL,
				   sodium_base64_VARIANT_ORIGINAL) == 0 && got == CHECKPOINT_PUBKEY_SIZE
			 ? 0 : -1;
	if (rc)
		fprintf(stderr, "suanli: --pubkey: not a file nor a base64 Ed25519 public key (32 bytes)\n");
	free(text);
	return rc;
}

struct export_scan {
	struct checkpoint *cps;
	size_t n, cap;
	char origin[CHECKPOINT_ORIGIN_MAX + 1];
	uint64_t first_seq;
	bool tenant_scope; /* a tenant's export: entries with proofs */
	char tenant[AUDIT_TENANT_MAX + 1]; /* whose (the key line's "tenant") */
	char pubkey[64];                   /* the key line's (informational) */
	json_t **notes; /* deferred: the origin may come after them */
	size_t nnotes;  /* notes held (cps[nnotes..n) came from --checkpoint) */
	uint64_t *sizes;
};

/* First pass: checkpoints and the key line. */
static int scan_meta(FILE *f, const char *path, struct export_scan *x)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	long lineno = 0;
	int rc = 0;
	x->first_seq = 1;
	while (!rc && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if ((size_t)n > AUDIT_EXPORT_LINE_MAX) {
			fprintf(stderr, "suanli: %s:%ld: line longer than %u bytes\n", path, lineno,
				AUDIT_EXPORT_LINE_MAX);
			rc = -1;
			break;
		}
		json_t *o = json_loadb(line, (size_t)n, 0, NULL);
		const char *type = json_string_value(json_object_get(o, "type"));
		if (!o || !type) {
			fprintf(stderr, "suanli: %s:%ld: not an export line (JSON with \"type\")\n", path,
				lineno);
			rc = -1;
		} else if (!strcmp(type, "key")) {
			snprintf(x->origin, sizeof(x->origin), "%s", out_str(o, "origin", ""));
			json_int_t fs = json_integer_value(json_object_get(o, "first_seq"));
			x->first_seq = fs > 0 ? (uint64_t)fs : 1;
			x->tenant_scope = !strcmp(out_str(o, "scope", ""), "tenant");
			snprintf(x->tenant, sizeof(x->tenant), "%s", out_str(o, "tenant", ""));
			snprintf(x->pubkey, sizeof(x->pubkey), "%s", out_str(o, "public_key", ""));
		} else if (!strcmp(type, "checkpoint")) {
			/* Two arrays, one capacity: both grow the same way. */
			size_t cn = x->cap, cs = x->cap;
			enum sl_err ge = sl_grow(&x->notes, &cn, x->n + 1, AUDIT_EXPORT_MAX_CPS);
			if (!ge)
				ge = sl_grow(&x->sizes, &cs, x->n + 1, AUDIT_EXPORT_MAX_CPS);
			x->cap = cn < cs ? cn : cs;
			if (ge) {
				if (ge == SL_ELIMIT)
					fprintf(stderr, "suanli: %s: more than %d checkpoints\n", path,
						AUDIT_EXPORT_MAX_CPS);
				rc = -1;
				json_decref(o);
				break;
			}
			json_int_t sz = json_integer_value(json_object_get(o, "size"));
			x->sizes[x->n] = sz > 0 ? (uint64_t)sz : 0;
			x->notes[x->n++] = json_incref(json_object_get(o, "note"));
			x->nnotes = x->n;
		}
		json_decref(o);
	}
	free(line);
	if (!rc && !(x->cps = calloc(x->n ? x->n : 1, sizeof(*x->cps))))
		rc = -1;
	for (size_t i = 0; !rc && i < x->n; i++) {
		const char *note = json_string_value(x->notes[i]);
		checkpoint_from_note(x->origin, x->sizes[i], note ? note : "", &x->cps[i]);
	}
	return rc;
}

/* Second pass: the entries, streamed into the verifier. */
static int feed_entries(FILE *f, const char *path, struct audit_verifier *v)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	long lineno = 0;
	int rc = 0;
	struct sl_diag d;
	while (!rc && !audit_verifier_decided(v) && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		json_t *o = json_loadb(line, (size_t)n, 0, NULL);
		if (strcmp(out_str(o, "type", ""), "entry")) {
			json_decref(o);
			continue;
		}
		static uint8_t bytes[AUDIT_EXPORT_LINE_MAX];
		uint8_t leaf[MERKLE_HASH_SIZE];
		size_t len = 0;
		const char *b64 = out_str(o, "canonical", "");
		json_int_t seq = json_integer_value(json_object_get(o, "seq"));
		bool have_leaf = hex_to(out_str(o, "leaf_hash", ""), leaf, sizeof(leaf));
		bool have_bytes = sodium_base642bin(bytes, sizeof(bytes), b64, strlen(b64), NULL,
						    &len, NULL, sodium_base64_VARIANT_ORIGINAL) == 0;
		/* Unreadable bytes are kept as empty ones, which never decode: the
		 * entry then counts as altered even if its leaf hash is intact. */
		struct audit_record r = {seq > 0 ? (uint64_t)seq : 0, bytes, have_bytes ? len : 0,
					 have_leaf ? leaf : NULL, false, 0, NULL, NULL};
		sl_diag_clear(&d);
		if (audit_verifier_add(v, &r, &d)) {
			fprintf(stderr, "suanli: %s:%ld: %s\n", path, lineno, d.msg);
			rc = -1;
		}
		json_decref(o);
	}
	free(line);
	return rc;
}

/* The export's "head" line: the tenant's newest entry in the checkpoint's
 * heads tree, with its proof. */
struct head_line {
	bool have;
	struct audit_head h;
	uint64_t index, count, size;
	struct merkle_proof p;
};

static bool head_from(const json_t *o, struct head_line *hl)
{
	snprintf(hl->h.tenant, sizeof(hl->h.tenant), "%s", out_str(o, "tenant", ""));
	json_int_t seq = json_integer_value(json_object_get(o, "seq"));
	json_int_t idx = json_integer_value(json_object_get(o, "index"));
	json_int_t cnt = json_integer_value(json_object_get(o, "count"));
	json_int_t sz = json_integer_value(json_object_get(o, "size"));
	hl->h.seq = seq > 0 ? (uint64_t)seq : 0;
	hl->index = idx > 0 ? (uint64_t)idx : 0;
	hl->count = cnt > 0 ? (uint64_t)cnt : 0;
	hl->size = sz > 0 ? (uint64_t)sz : 0;
	hl->have = hex_to(out_str(o, "leaf_hash", ""), hl->h.hash, sizeof(hl->h.hash)) &&
		   proof_from(json_object_get(o, "proof"), &hl->p);
	return hl->have;
}

/* A tenant's export: each entry on its own, by its inclusion proof in the
 * signed checkpoint the export carries, and all of them together by the
 * tenant chain (tenant_chain.h): every entry links to the one before, and the
 * checkpoint names the newest, so an entry withheld or filed under another
 * tenant is seen too. */
static int verify_tenant(FILE *f, const char *path, const struct export_scan *x,
			 const uint8_t pk[CHECKPOINT_PUBKEY_SIZE], int json)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	uint64_t proven = 0, unproven = 0, bad_seq = 0;
	const char *fault = NULL;
	char detail[SL_DIAG_MSG] = "";
	struct sl_diag d;
	static uint8_t bytes[AUDIT_EXPORT_LINE_MAX];
	static struct head_line hl;
	struct audit_tenant_check tc;
	struct audit_tenant_report tr;
	const struct checkpoint *newest = NULL;
	memset(&hl, 0, sizeof(hl));
	for (size_t i = 0; i < x->nnotes; i++)
		if (!newest || x->cps[i].size > newest->size)
			newest = &x->cps[i];
	audit_tenant_check_init(&tc, x->tenant, x->first_seq, newest ? newest->size : 0);
	for (size_t i = 0; i < x->n && !fault; i++) {
		sl_diag_clear(&d);
		if (checkpoint_verify(&x->cps[i], pk, &d)) {
			fault = "checkpoint signature invalid";
			bad_seq = x->first_seq;
			snprintf(detail, sizeof(detail), "checkpoint of size %llu: %.400s",
				 (unsigned long long)x->cps[i].size, d.msg);
		}
	}
	while (!fault && (n = getline(&line, &cap, f)) >= 0) {
		json_t *o = json_loadb(line, (size_t)n, 0, NULL);
		if (!strcmp(out_str(o, "type", ""), "head") && !head_from(o, &hl)) {
			fault = "checkpoint inconsistent";
			bad_seq = x->first_seq;
			snprintf(detail, sizeof(detail), "the export's head line is malformed");
		}
		if (strcmp(out_str(o, "type", ""), "entry")) {
			json_decref(o);
			continue;
		}
		json_int_t seq = json_integer_value(json_object_get(o, "seq"));
		const json_t *proof = json_object_get(o, "proof");
		uint64_t psize = (uint64_t)json_integer_value(json_object_get(o, "proof_size"));
		const char *b64 = out_str(o, "canonical", "");
		size_t len = 0;
		struct merkle_proof p;
		struct audit_entry e;
		const struct checkpoint *cp = NULL;
		for (size_t i = 0; i < x->n; i++)
			if (x->cps[i].size == psize)
				cp = &x->cps[i];
		sl_diag_clear(&d);
		if (json_is_null(proof) || !proof) {
			unproven++;
		} else if (sodium_base642bin(bytes, sizeof(bytes), b64, strlen(b64), NULL, &len, NULL,
					     sodium_base64_VARIANT_ORIGINAL) ||
			   !proof_from(proof, &p) || !cp ||
			   audit_verify_entry(bytes, len, x->first_seq, &p, cp, pk,
					      x->origin[0] ? x->origin : NULL, &e, &d) ||
			   e.seq != (uint64_t)seq) {
			fault = "entry altered";
			bad_seq = seq > 0 ? (uint64_t)seq : 0;
			snprintf(detail, sizeof(detail), "%s", d.msg[0] ? d.msg
					 : !cp ? "no checkpoint of the proof's size in the export"
					       : "its bytes, proof or seq do not check");
		} else {
			proven++;
		}
		if (!fault) {
			len = 0;
			if (sodium_base642bin(bytes, sizeof(bytes), b64, strlen(b64), NULL, &len, NULL,
					      sodium_base64_VARIANT_ORIGINAL))
				len = 0;
			audit_tenant_add(&tc, seq > 0 ? (uint64_t)seq : 0, bytes, len);
		}
		json_decref(o);
	}
	free(line);
	(void)path;
	if (!fault && hl.have && newest && hl.size != newest->size) {
		fault = "checkpoint inconsistent";
		bad_seq = x->first_seq;
		snprintf(detail, sizeof(detail), "the head proof is for size %llu, the checkpoint's %llu",
			 (unsigned long long)hl.size, (unsigned long long)newest->size);
	}
	if (!fault && x->tenant[0] &&
	    audit_tenant_finish(&tc, newest, hl.have ? &hl.h : NULL, hl.index, hl.count, &hl.p,
				&tr) != SL_OK) {
		fault = audit_fault_name((enum audit_fault)tr.fault);
		bad_seq = tr.seq;
		snprintf(detail, sizeof(detail), "%s", tr.detail);
	}
	if (json)
		printf("{\"ok\": %s, \"entries\": %llu, \"unproven\": %llu, \"first_bad_seq\": %llu, "
		       "\"fault\": \"%s\"}\n", fault ? "false" : "true", (unsigned long long)proven,
		       (unsigned long long)unproven, (unsigned long long)bad_seq, fault ? fault : "ok");
	else if (fault)
		print_verdict(false, 0, 0, fault, bad_seq, detail);
	else
		printf("Tenant's audit entries intact: %llu proven in the signed checkpoint%s; %llu newer "
		       "entries not yet covered by a checkpoint.\n"
		       "Complete: %s.\n",
		       (unsigned long long)proven, x->n ? "" : " (none in the export)",
		       (unsigned long long)unproven,
		       !x->tenant[0] ? "not checked (the export names no tenant)"
		       : newest && newest->has_heads ? "the chain of links holds and ends at the checkpoint's head"
						     : "links hold; no checkpoint with tenant heads yet");
	return fault ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* Adds the checkpoint note kept in file path (e.g. from an earlier audit) to
 * the ones the export carries: it reveals entries cut from the end together
 * with every later checkpoint, which the export alone cannot show. */
static int add_kept_checkpoint(struct export_scan *x, const char *path)
{
	char *text = NULL;
	size_t len = 0;
	struct sl_diag d;
	sl_diag_clear(&d);
	if (sl_read_file(path, CHECKPOINT_TEXT_MAX, &text, &len, &d)) {
		cli_print_diag(&d);
		return -1;
	}
	struct checkpoint *v = realloc(x->cps, (x->n + 1) * sizeof(*v));
	if (!v) {
		free(text);
		return -1;
	}
	x->cps = v;
	if (checkpoint_parse(text, len, &x->cps[x->n], &d)) {
		fprintf(stderr, "suanli: --checkpoint %s: not a checkpoint note: %s\n", path, d.msg);
		free(text);
		return -1;
	}
	x->n++;
	free(text);
	return 0;
}

/* Verifies the export in f (named path). pubkey NULL: the export's own key
 * line (online --tenant only; said on stderr). tenant: the export must be
 * that tenant's. */
static int verify_file(FILE *f, const char *path, const char *pubkey, const char *kept, int json,
		       const char *tenant)
{
	uint8_t pk[CHECKPOINT_PUBKEY_SIZE];
	struct export_scan x;
	struct audit_verifier v;
	struct audit_verify_report rep;
	struct sl_diag d;
	int rc = CLI_EXIT_FAIL;
	memset(&x, 0, sizeof(x));
	sl_diag_clear(&d);
	if (need_sodium() || (pubkey && load_pubkey(pubkey, pk)))
		return CLI_EXIT_FAIL;
	if (scan_meta(f, path, &x))
		goto out;
	if (!pubkey) {
		fprintf(stderr, "suanli: checking against the controller's own key; pass --pubkey "
				"(a copy of audit.pub you keep) to trust your copy instead\n");
		if (load_pubkey(x.pubkey, pk))
			goto out;
	}
	if (kept && add_kept_checkpoint(&x, kept))
		goto out;
	if (tenant && (!x.tenant_scope || strcmp(x.tenant, tenant))) {
		fprintf(stderr, "suanli: %s is not tenant '%s''s export (it is %s%s)\n", path, tenant,
			x.tenant_scope ? "tenant " : "the whole log",
			x.tenant_scope ? x.tenant : "");
		goto out;
	}
	if (x.tenant_scope) {
		rewind(f);
		rc = verify_tenant(f, path, &x, pk, json);
		goto out;
	}
	struct audit_verify_config cfg = {pk, x.origin[0] ? x.origin : NULL, x.first_seq, x.cps, x.n,
					  NULL, 0, 0};
	if (audit_verifier_init(&v, &cfg, &d)) {
		cli_print_diag(&d);
		goto out;
	}
	rewind(f);
	if (feed_entries(f, path, &v) == 0) {
		bool ok = audit_verifier_finish(&v, &rep) == SL_OK;
		if (json)
			printf("{\"ok\": %s, \"entries\": %llu, \"checkpoints\": %zu, \"first_bad_seq\": %llu, "
			       "\"fault\": \"%s\"}\n",
			       ok ? "true" : "false", (unsigned long long)rep.entries,
			       rep.checkpoints_verified, (unsigned long long)(ok ? 0 : rep.seq),
			       audit_fault_name(rep.fault));
		else
			print_verdict(ok, rep.entries, rep.checkpoints_verified,
				      audit_fault_name(rep.fault), rep.seq, rep.detail);
		rc = ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
	}
	audit_verifier_release(&v);
out:
	for (size_t i = 0; i < x.nnotes; i++)
		json_decref(x.notes[i]);
	free(x.notes);
	free(x.sizes);
	free(x.cps);
	return rc;
}

static int verify_offline(const char *path, const char *pubkey, const char *kept, int json,
			  const char *tenant)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "suanli: cannot open %s: %s\n", path, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	int rc = verify_file(f, path, pubkey, kept, json, tenant);
	fclose(f);
	return rc;
}

/* `verify --tenant T` online: the tenant's export, checked here. */
static int verify_tenant_online(struct client *cl, const char *tenant, const char *pubkey)
{
	char path[CLIENT_PATH_MAX];
	struct http_response r = {0};
	struct sl_diag d;
	int rc;
	for (const char *p = tenant; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '_' || *p == '.'))
			return cli_usage_error(cl->cmd, "--tenant: '%s' is not a tenant name", tenant);
	snprintf(path, sizeof(path), "/v1/audit/export?tenant=%s", tenant);
	if ((rc = client_open(cl)) != CLI_EXIT_OK)
		return rc;
	sl_diag_clear(&d);
	rc = CLI_EXIT_FAIL;
	if (http_client_request(cl->http, "GET", path, NULL, 0, NULL, 0, &r, &d)) {
		cli_print_diag(&d);
	} else if (r.status != 200) {
		if (http_client_error_diag(&r, &d) != SL_OK)
			cli_print_diag(&d);
	} else {
		FILE *f = tmpfile();
		if (f && fwrite(r.body, 1, r.len, f) == r.len && fflush(f) == 0) {
			rewind(f);
			rc = verify_file(f, "the tenant's export", pubkey, NULL, cl->json, tenant);
		} else {
			fprintf(stderr, "suanli: cannot buffer the export: %s\n", strerror(errno));
		}
		if (f)
			fclose(f);
	}
	http_response_release(&r);
	client_close(cl);
	return rc;
}

static int audit_verify(int argc, char **argv)
{
	static const struct option opts[] = {{"offline", no_argument, NULL, 'o'},
					     {"export", required_argument, NULL, 'e'},
					     {"pubkey", required_argument, NULL, 'k'},
					     {"checkpoint", required_argument, NULL, 'c'},
					     {"tenant", required_argument, NULL, 't'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	struct client cl;
	const char *file = NULL, *key = NULL, *kept = NULL, *tenant = NULL;
	int c, offline = 0;

	client_init(&cl, "audit verify");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(verify_help, stdout); return CLI_EXIT_OK;
		case 'o': offline = 1; break;
		case 'e': file = optarg; break;
		case 'k': key = optarg; break;
		case 'c': kept = optarg; break;
		case 't': tenant = optarg; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	if (!offline) {
		if (tenant && !file && !kept)
			return verify_tenant_online(&cl, tenant, key);
		if (file || key || kept)
			return cli_usage_error(cl.cmd, "--export, --pubkey and --checkpoint go with --offline");
		return verify_online(&cl);
	}
	if (!file || !key)
		return cli_usage_error(cl.cmd, "--offline needs --export FILE and --pubkey KEY");
	return verify_offline(file, key, kept, cl.json, tenant);
}

/* ---- export ---- */

static const char export_help[] =
	"usage: suanli audit export [--output FILE] [OPTIONS]\n\n"
	"Writes the whole audit log as JSON lines (entries with their canonical\n"
	"bytes and leaf hashes, then the signed checkpoints, then the public key)\n"
	"for a SIEM or for 'suanli audit verify --offline'. Admin, operator,\n"
	"auditor. Answers are bounded (16 MiB through this command; fetch larger\n"
	"logs from GET /v1/audit/export directly).\n\n"
	"  --output FILE      write there instead of standard output\n" CLIENT_HELP_OPTS
	"\nExample:\n  suanli audit export --output audit.jsonl\n";

static int audit_export(int argc, char **argv)
{
	static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
					     CLIENT_LONG_OPTS,
					     {0, 0, 0, 0}};
	struct client cl;
	const char *out = NULL;
	struct http_response r = {0};
	struct sl_diag d;
	int c, rc;

	client_init(&cl, "audit export");
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (client_opt(&cl, c, optarg))
			continue;
		switch (c) {
		case 'h': fputs(export_help, stdout); return CLI_EXIT_OK;
		case 'o': out = optarg; break;
		default: return client_getopt_error(cl.cmd, c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cl.cmd, "unexpected argument '%s'", argv[optind]);
	if ((rc = client_open(&cl)) != CLI_EXIT_OK)
		return rc;
	sl_diag_clear(&d);
	rc = CLI_EXIT_FAIL;
	if (http_client_request(cl.http, "GET", "/v1/audit/export", NULL, 0, NULL, 0, &r, &d)) {
		cli_print_diag(&d);
	} else if (r.status != 200) {
		if (http_client_error_diag(&r, &d) != SL_OK)
			cli_print_diag(&d);
	} else {
		FILE *f = out ? fopen(out, "w") : stdout;
		if (!f) {
			fprintf(stderr, "suanli: cannot create %s: %s\n", out, strerror(errno));
		} else {
			bool okw = fwrite(r.body, 1, r.len, f) == r.len;
			if ((out ? fclose(f) : fflush(f)) || !okw)
				fprintf(stderr, "suanli: cannot write %s\n", out ? out : "the export");
			else
				rc = CLI_EXIT_OK;
		}
	}
	http_response_release(&r);
	client_close(&cl);
	return rc;
}

int cmd_audit(int argc, char **argv)
{
	static const struct client_sub subs[] = {
		{"log", audit_log, "list entries (who did what, for which tenant, how it ended)"},
		{"checkpoint", audit_checkpoint, "sign a checkpoint now, or show the newest"},
		{"proof", audit_proof, "prove that an entry is in the log, and check the proof"},
		{"consistency", audit_consistency, "prove that the log only grew since a size"},
		{"verify", audit_verify, "check the whole log, online or from an export"},
		{"export", audit_export, "the log as JSON lines, for a SIEM or offline checks"},
	};
	return client_dispatch("audit",
			       "The tamper-evident audit log: every change and every denied request,\n"
			       "in a Merkle tree with signed checkpoints.",
			       subs, sizeof(subs) / sizeof(subs[0]), argc, argv);
}
