/* instances_int.h - what the instance files share (instances.c, the records,
 * reports and work items; h_instances.c, the API; instance_place.c, leases and
 * placement; instance_billing.c, meters and the balance rules; ssh_keys.c;
 * instance_migrate.c): the records behind struct ctl's instances handle.
 * Loop thread only. */
#ifndef SL_CTL_INSTANCES_INT_H
#define SL_CTL_INSTANCES_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl_int.h"
#include "images.h"
#include "instance_sm.h"
#include "instances.h"
#include "ssh_pubkey.h"

#define INST_ID_LEN 16
#define INST_MAX (1 << 20)          /* instances in memory, released ones included */
#define INST_MAX_NODES 16           /* nodes of one instance */
#define INST_MAX_PORTS 16           /* renter's ports */
#define INST_MAX_HIST 64            /* history entries kept (oldest dropped) */
#define INST_REASON_MAX 320
#define INST_PROGRESS_SIZE 160      /* bytes kept of a node's "progress" (NUL included) */
#define INST_ERROR_SIZE 256         /* likewise of its "error" */
#define INST_MODEL_SIZE 32          /* likewise of a model or driver version */
#define INST_VOLUME_MAX_GIB 65536
#define INST_STOP_GRACE_S 10
#define INST_STOP_SLACK_S 60         /* stopping -> stopped without word after grace + this */
#define INST_IDLE_MIN_S 10           /* --auto-stop-idle bounds */
#define INST_IDLE_MAX_S (30 * 86400)
#define INST_IDLE_UTIL_PCT 1         /* idle: every GPU below this */
#define INST_NOGPU_CPUS 2            /* a no-GPU start's container */
#define INST_NOGPU_MEM_MIB 4096
#define INST_KEY_NAME_MAX 63
#define INST_MAX_KEYS 64             /* SSH keys of one user */
#define INST_MAX_KEYS_ALL 100000
#define INST_TICK_MS 1000

/* One node of an instance: its part of the placement and what its agent
 * said last. */
struct inst_node {
	const char *node;        /* the controller's copy of the name (inst_name); never NULL */
	gpumask_t gpus;          /* the lease's GPUs there (0 in no-GPU mode) */
	int cpus;
	int64_t mem_mib;
	bool whole;              /* every GPU of the node (host network) */
	/* reported */
	enum inst_report rep;
	char rep_word[16];       /* the agent's word ("pulling", ...) */
	int64_t rep_epoch;
	char *progress;          /* owned, cut to INST_PROGRESS_SIZE - 1 bytes; NULL: "" */
	char *error;             /* owned, cut to INST_ERROR_SIZE - 1 bytes; NULL: "" */
	int ssh_port;
	/* as reported, kept as compact JSON text (inst_text_of; a jansson
	 * tree of each took ~600 bytes); NULL: none */
	char *ports;             /* [{"port","host_port"}] */
	char *host_keys;         /* [{"type","fingerprint"}] */
	int64_t running_since_ns, stopped_at_ns;
	char stopped_by[8];
	int64_t idle_since_ns;   /* every GPU below 1% since (0: busy or unknown) */
	int64_t last_report_ns;
};

/* reason: counted (sl_ctext; maybe shared with the instance's reason:
 * inst_hist_add), or inst_hist_empty when none could be. */
struct inst_hist {
	int64_t at_ns;
	enum inst_state state;
	char *reason;
};
extern char inst_hist_empty[1];

/* A billing run of one kind: [from, to) with units (GPUs, 1, GiB); to 0: open. */
struct inst_seg {
	int64_t from_ns, to_ns;
	int units;
};
#define INST_MAX_SEGS 256

enum inst_mode { IM_GPU, IM_NOGPU };

/* An instance keeps no fixed text buffers (bench/results/memory.md: 20,000
 * instances): names (tenant, user, model, region, site, image, its ref, the
 * driver need, the key's name, node names) are the controller's shared
 * copies (inst_name: ctl_name, one per distinct name, never NULL, cut to the
 * size the fixed buffers had), a node's progress and error are owned heap
 * strings (inst_text_set; NULL reads as "", inst_str), and the reason is a
 * counted text its newest history entry shares (inst_reason_set). */
struct instance {
	uint64_t seq;
	char id[INST_ID_LEN];
	const char *tenant;          /* CTL_NAME_MAX */
	const char *user;            /* CTL_USER_MAX */
	enum inst_state state;
	enum inst_mode mode;
	char *reason;                /* INST_REASON_MAX - 1 bytes at most; NULL: ""; counted,
					shared with its newest history entry when equal
					(inst_reason_set) */
	char lease[24];              /* the lease of the current start ("": none) */
	/* the request */
	int gpus, per_node;
	const char *model;           /* INST_MODEL_SIZE */
	const char *region, *site;   /* FLEET_NAME_MAX */
	enum plan plan;
	int volume_gib;
	const char *image, *image_ref; /* IMAGE_NAME_MAX, IMAGE_REF_MAX */
	const char *min_driver;      /* the image's need when created ("": none) */
	const char *ssh_key;         /* the key named at create ("": all the user's) */
	/* array of key lines, fixed at create (compact JSON text, counted:
	 * shared with the instance made before when equal, inst_keys_set) */
	char *authorized_keys;
	int64_t auto_stop_idle_s;    /* 0: never */
	uint16_t ports[INST_MAX_PORTS]; /* 1..65535 (h_instances.c checks) */
	int nports;
	/* where it lives: the home nodes (the disks are there); nodes holds
	 * capnodes entries (inst_nodes_reserve; nodes[0] always exists), so a
	 * one-node instance does not carry INST_MAX_NODES of them */
	int nnodes, capnodes;
	enum inst_report mig_rep;    /* migration (below): the old node's last word */
	struct inst_node *nodes;
	int64_t epoch;
	/* migration: the old node (home before) exporting its disks; "" none */
	const char *migrate_from;
	int64_t mig_epoch;
	bool mig_removing;           /* the new node runs: the old one removes */
	bool mig_first_run;          /* the new node's first run carries migrate_from */
	bool tracked;                /* not released, or removal not yet confirmed */
	/* instants */
	int64_t created_ns, running_since_ns, stopped_ns, released_ns;
	int64_t broke_since_ns;      /* its tenant below zero since (0: not) */
	/* billing runs, for the answer and the oracle (the meters are billing's);
	 * grown as runs open, at most INST_MAX_SEGS each */
	struct inst_seg *gpu_segs, *nogpu_segs;
	int ngpu_segs, nnogpu_segs, capgpu_segs, capnogpu_segs;
	int64_t disk_from_ns, disk_to_ns;
	const char *gpu_site, *gpu_region; /* of the home */
	const char *gpu_model;
	struct inst_hist *hist;      /* grown as entries come, at most INST_MAX_HIST */
	int nhist, caphist;
};

struct ssh_key_rec {
	char tenant[CTL_NAME_MAX + 1]; /* "" for provider users */
	char user[CTL_USER_MAX + 1];
	char name[INST_KEY_NAME_MAX + 1];
	char type[SSH_KEY_TYPE_MAX];
	char fingerprint[SSH_FINGERPRINT_SIZE];
	char *line;                  /* canonical "TYPE BODY[ COMMENT]" */
	int64_t created_ns;
};

struct ctl_instances {
	struct instance **v;         /* index seq - 1 */
	int n, cap;
	int nidle;                   /* of them, with auto_stop_idle_s (set at create only) */
	int64_t retention_ns;
	int64_t next_ms;             /* next tick */
	struct ssh_key_rec *keys;
	int nkeys, capkeys;
	uint64_t key_seq;
	uint64_t hist_seq;           /* highest seq in the store's instance history */
	char *keys_last;             /* the authorized_keys made last (a holder of it) */
};

/* Released for good (removal confirmed, no migration left): the row lives
 * in the instance history (history.h) and a restart does not load it. */
static inline bool inst_in_history(const struct instance *in)
{
	return in->state == IS_RELEASED && !in->tracked;
}
/* The instance at index i (seq - 1): in memory, or read from history into
 * *tmp (inst_free it); NULL if none. */
const struct instance *inst_at(struct ctl *c, int i, struct instance **tmp);

/* instance_codec.c */
json_t *inst_to_json(struct ctl *c, const struct instance *in, bool store);
/* A stored row back into an instance; NULL (d set) when malformed. */
struct instance *inst_from_json(struct ctl *c, const json_t *o, struct sl_diag *d);
void inst_save(struct ctl *c, struct instance *in);
/* An RFC 3339 field as ns (0: absent or bad); a string field copied ("" absent). */
int64_t inst_tfield(const json_t *o, const char *k);
void inst_sfield(char *dst, size_t n, const json_t *o, const char *k);
/* A string field as inst_name sets it (size: as there). */
void inst_nfield(struct ctl *c, const char **dst, size_t size, const json_t *o, const char *k);
/* A string field as inst_text_set sets it. */
void inst_tsfield(char **dst, size_t size, const json_t *o, const char *k);

/* instances.c */
/* Sets *dst to the controller's copy of s (NULL: ""), cut to size - 1 bytes
 * as the fixed buffers it replaces did (size <= IMAGE_REF_MAX + 1); out of
 * memory *dst is "" (logged). */
void inst_name(struct ctl *c, const char **dst, const char *s, size_t size);
/* Sets *dst (owned; NULL for "") to a copy of s cut to size - 1 bytes (s
 * may be *dst itself); out of memory *dst is NULL (logged). */
static inline void inst_text_set(char **dst, const char *s, size_t size)
{
	ctl_text_set(dst, s, size, NULL);
}
static inline const char *inst_str(const char *s)
{
	return s ? s : "";
}
/* Empties node nd: its owned strings freed, every field zero, its name "". */
void inst_node_clear(struct inst_node *nd);
/* Sets in->reason to s (NULL: "") cut to INST_REASON_MAX - 1 bytes, sharing
 * the newest history entry's text when equal; out of memory it is ""
 * (logged). s may be in->reason. */
void inst_reason_set(struct instance *in, const char *s);
/* Appends a history entry (the oldest goes past INST_MAX_HIST, or when out
 * of memory); its reason shares in->reason's text when equal. */
void inst_hist_add(struct instance *in, int64_t at, enum inst_state s, const char *reason);
/* A JSON value as compact text (malloc'd; NULL for NULL or out of memory),
 * and back (a new reference; NULL for NULL or unreadable text): what an
 * instance keeps of a report is text, which costs a tenth of the tree. */
char *inst_text_of(const json_t *v);
/* Sets in->authorized_keys (NULL before) to keys as text, shared with the
 * instance's before when equal (a user's instances mostly carry the same
 * keys); false out of memory. */
bool inst_keys_set(struct ctl *c, struct instance *in, const json_t *keys);
json_t *inst_json_of(const char *text);
/* in->authorized_keys as a JSON array (a new reference; [] when none). */
json_t *inst_keys_json(const struct instance *in);
/* Room for n nodes in in->nodes (new ones zeroed); false out of memory. */
bool inst_nodes_reserve(struct instance *in, int n);
struct instance *inst_find(struct ctl *c, const char *id);
/* The instance named in the path, visible to the caller; NULL after a 404. */
struct instance *inst_path(struct ctl_call *call);
/* Moves in by event e (the table decides; false: not allowed, nothing
 * changed), with a history entry; saves and tells its nodes. */
bool inst_event(struct ctl *c, struct instance *in, enum inst_event e, const char *reason);
/* The desired state of in changed: every node concerned gets a new version. */
void inst_bump(struct ctl *c, const struct instance *in);
/* A migration that did not finish goes back to the old home (whose copy
 * stays) and its staged disks are deleted; nothing when none. */
void inst_mig_abandon(struct ctl *c, struct instance *in);
void inst_free(struct instance *in);
/* A zeroed record with its names "" and nodes[0]; NULL out of memory. */
struct instance *inst_alloc(void);
/* A new instance record with the next id (not yet in the table). */
struct instance *inst_new(struct ctl *c);
bool inst_add(struct ctl *c, struct instance *in);
/* Takes in, the last one added, out of the table again and frees it (a
 * create that could not be placed: nothing of it was written). */
void inst_drop_last(struct ctl *c, struct instance *in);

/* instance_place.c */
/* Places in's lease now: on nodes allowed by mode (home: exactly the home
 * nodes; any: anywhere the request and the image's driver allow; migrate:
 * other nodes of the home's site). SL_OK: the lease is active and in's nodes
 * and lease set (nothing else changed); SL_ENOSPACE / others with d saying
 * why (nothing changed). */
enum inst_where { IW_ANY, IW_HOME, IW_MIGRATE };
enum sl_err inst_place(struct ctl *c, struct instance *in, enum inst_where w, const char *user,
		       struct sl_diag *d) SL_MUST_USE;
/* Releases in's lease (reason in its history); no-op without one. */
void inst_lease_release(struct ctl *c, struct instance *in, const char *why);
/* Whether the home nodes have in's GPUs free now. */
bool inst_home_free(struct ctl *c, const struct instance *in);
/* The node's driver version from its agent's discovery ("" unknown). */
const char *inst_node_driver(struct ctl *c, int node);
/* Compares driver versions "550.54.14" numerically: <0, 0, >0. */
int inst_driver_cmp(const char *a, const char *b);

/* instance_billing.c */
void inst_bill_gpu_on(struct ctl *c, struct instance *in, int64_t at_ns);
void inst_bill_gpu_off(struct ctl *c, struct instance *in, int64_t at_ns);
void inst_bill_nogpu_on(struct ctl *c, struct instance *in, int64_t at_ns);
void inst_bill_nogpu_off(struct ctl *c, struct instance *in, int64_t at_ns);
void inst_bill_disk_on(struct ctl *c, struct instance *in, int64_t at_ns);
void inst_bill_disk_end(struct ctl *c, struct instance *in, int64_t at_ns);
/* {"gpu_fen","no_gpu_fen","storage_fen","total_fen","storage_fen_per_day"} */
json_t *inst_cost_json(struct ctl *c, const struct instance *in);
/* The renter's notice about money ("" when none) into buf. */
void inst_notice(struct ctl *c, const struct instance *in, char *buf, size_t n);
/* Retention: stopped instances of tenants below zero. */
void inst_bill_tick(struct ctl *c);

/* ssh_keys.c */
enum sl_err ssh_keys_load(struct ctl *c, struct sl_diag *d) SL_MUST_USE;
void ssh_keys_free(struct ctl *c);
/* The user's key called name, NULL when none. */
const struct ssh_key_rec *ssh_key_find(struct ctl *c, const char *tenant, const char *user,
				       const char *name);
/* The user's keys' lines as a new array. */
json_t *ssh_keys_of(struct ctl *c, const char *tenant, const char *user);

/* instance_migrate.c */
/* The staged parts' directory for in (DATA/migrations/ID), removed. */
void inst_migration_clear(struct ctl *c, const struct instance *in);
/* Both parts uploaded and checked. */
bool inst_migration_ready(struct ctl *c, const struct instance *in);

#endif
