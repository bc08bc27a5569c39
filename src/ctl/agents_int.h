/* agents_int.h - what agents.c (state, store, lifecycle) and agents_api.c
 * (the HTTP handlers and nodes joining the fleet) share, and agents_metrics.c
 * (their part of /metrics) reads. Private to them. */
#ifndef SL_CTL_AGENTS_INT_H
#define SL_CTL_AGENTS_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agents.h"
#include "ctl_int.h"
#include "gpu_health.h"
#include "lease_net.h"
#include "topo.h"

/* Bounds on what agents send (DESIGN.md §10.6). */
#define AGENT_ADDR_MAX 255      /* "addr": a host name or address */
#define AGENT_BOOT_ID_MAX 128
#define AGENT_VERSION_MAX 64
#define AGENT_MAX_WORK 4096     /* items in "work" / "running" */
#define AGENT_MAX_XIDS 64       /* XID events per GPU in one heartbeat */
#define AGENT_MAX_EVENTS 256    /* gpu_events history kept per node (oldest dropped) */
#define AGENT_MAX_METRIC 1000000000LL /* bound on a GPU metric (temp, power, ECC counts) */
#define AGENT_MAX_INTERVAL_S 86400    /* bound on the lifecycle flags */
#define AGENT_SAVE_EVERY_NS (60LL * 1000000000LL) /* last_heartbeat persisted at most this often */
#define AGENT_SHAPES 8          /* recent "gpus" shapes kept to share (struct ctl_agents) */
#define AGENT_DICTS 8           /* discoveries kept as zlib dictionaries (struct agent_disc) */
#define AGENT_GPUS_TEXT_MAX ((size_t)1 << 24) /* bound on a heartbeat's "gpus" as text */

enum agent_life { AL_READY, AL_UNREACHABLE, AL_DOWN };

/* One GPU object of a heartbeat's "gpus", the integer figures /metrics
 * shows (agents_metrics.c); has: bit k set when fig[k] was sent. */
enum { AGF_TEMP, AGF_POWER, AGF_ECC_SBE, AGF_ECC_DBE, AGF_NVLINK_UP, AGF_N };
struct agent_gpu_fig {
	int32_t index;
	int32_t fig[AGF_N];
	uint8_t has;         /* bit AGF_N: index was sent */
};
extern const char *const agent_fig_keys[AGF_N];

/* The discovery as registered: its compact JSON text, deflated (zlib),
 * written back into the record's row as it came and parsed only for a
 * rejoin's custom type. As a jansson tree it took ~40 KB per node, as text
 * ~3.3 KB, deflated 452 bytes (an hgx-h100-8), and 131 deflated against
 * another node's discovery of that type as zlib's preset dictionary (the
 * same keys, models and links; only serials, UUIDs and bus ids differ;
 * bench_memory's 1,000 nodes, on average).
 * What is read often is kept apart: the driver, and each GPU's NVLink count
 * (-1 unknown). */
struct agent_disc {
	unsigned char *z;      /* deflated text; NULL: none */
	char *dict;            /* the preset dictionary (sl_ctext, shared); NULL: none */
	uint32_t zlen, len;    /* deflated and text bytes */
	char driver[32];
	int8_t nvlinks[TOPO_MAX_GPUS];
};

/* A node's record. Its texts other than the name are heap strings sized to
 * their content (agents_text_set; never NULL: agents_empty when ""), not
 * fixed buffers (bench/results/memory.md: 10,000 agents). */
struct agent_rec {
	char name[CTL_NAME_MAX + 1];
	char *addr;            /* AGENT_ADDR_MAX bytes at most */
	char *boot_id;         /* AGENT_BOOT_ID_MAX */
	char *version;         /* AGENT_VERSION_MAX */
	char *host_tenant;     /* CTL_NAME_MAX: runs this tenant's work as host processes ("": containers) */
	char lease_net[LEASE_NET_CIDR_MAX]; /* its --lease-net pool ("": none; lease_net.h) */
	struct agent_disc disc;
	json_t *labels;        /* {"site","leaf","type"} of a node that joined; NULL otherwise */
	int64_t registered_ns;
	int64_t last_hb_ns;    /* last report (register or heartbeat); 0: none ever */
	int64_t saved_hb_ns;   /* last_hb_ns as last stored */
	int64_t seen_ns;       /* base of the lifecycle timers: last report, or the
				  controller's start (a fresh grace after a restart) */
	enum agent_life life;
	int ngpus;
	char *reason;          /* CTL_REASON_MAX - 1 bytes at most */
	/* ngpus of them, allocated on the first GPU that leaves the fresh state
	 * (an XID, a failed check, a stored one); NULL while every GPU is fresh
	 * (gpu_health_init: OK, no XIDs), as nearly all are. Read through
	 * agents_gpu, written through agents_gpu_w. */
	struct gpu_health *gpu;
	/* The last heartbeat's "gpus" (memory only): the array as sent, as
	 * compact text (GET /v1/nodes/NAME shows each object) split into its
	 * shape and its numbers (json_shape.h: as text ~950 bytes a node of 8
	 * GPUs; the shape, 881 of them, is shared by the nodes that report
	 * alike, the numbers take ~70), and the figures /metrics shows, parsed once per
	 * heartbeat. */
	char *gpus_shape;      /* counted (sl_ctext), shared; NULL: none reported */
	unsigned char *gpus_nums;
	uint32_t gpus_nlen;
	int nfigs;
	struct agent_gpu_fig *figs;
	/* XID events reported since the start (memory only): TOPO_MAX_GPUS
	 * counts from the first; NULL while none was (agents_xids_count) */
	uint64_t *xids;
	/* gpu_events: [{"gpu","code","at","state"}]; NULL while none happened
	 * (agents_events: an empty array), as on nearly every node */
	json_t *events;
};

struct ctl_agents {
	int64_t hb_s, unreach_ns, down_ns;
	int64_t start_ns;
	struct agent_rec **recs;
	int n, cap;
	struct strmap *by_name;
	int64_t next_ns;       /* next lifecycle check; 0: none */
	/* While a node's leases fail (agents_tick): billing ends at its last report. */
	int failing_node;
	int64_t failing_at_ns;
	/* The "gpus" shapes reported last (a holder of each), for the next
	 * heartbeat of another node to share: one per node type, mostly. */
	char *shapes[AGENT_SHAPES];
	int next_shape;
	/* Discoveries (texts, a holder of each) that the next nodes' deflate
	 * against (struct agent_disc): one per kind of node, mostly. */
	char *dicts[AGENT_DICTS];
	int next_dict;
};

/* agents.c */
extern char agents_empty[1];
/* Sets *dst (agents_empty or owned) to a copy of s (NULL: "") cut to size - 1
 * bytes, as the fixed buffers it replaces did; s may be *dst. Out of memory
 * *dst is "" (logged). */
static inline void agents_text_set(char **dst, const char *s, size_t size)
{
	ctl_text_set(dst, s, size, agents_empty);
}
enum sl_err agents_load(struct ctl *c, struct sl_diag *d) SL_MUST_USE;
struct agent_rec *agents_rec(const struct ctl *c, const char *name);
/* Adds a record for name (registered nowhere yet). NULL out of memory. */
struct agent_rec *agents_rec_add(struct ctl *c, const char *name);
/* Writes rec's row (STORE_AGENTS) in the turn's transaction. */
void agents_rec_save(struct ctl *c, struct agent_rec *r);
/* A report arrived (register, heartbeat): timers restart; an unreachable or
 * down node comes back (audited, placer, scheduler). */
void agents_reported(struct ctl *c, struct agent_rec *r);
/* Sets r's discovery (compact text, driver, NVLink counts) from the tree d
 * (NULL: none); false out of memory (r unchanged). With old, r's discovery
 * before is moved there (for agents_disc_put_back or agents_disc_free)
 * instead of freed. */
bool agents_set_discovery(struct ctl_agents *a, struct agent_rec *r, const json_t *d,
			  struct agent_disc *old);
/* Puts old back as r's discovery (the one set since is freed). */
void agents_disc_put_back(struct agent_rec *r, struct agent_disc *old);
void agents_disc_free(struct agent_disc *d);
/* r's discovery as a tree (new reference; NULL when none or unreadable). */
json_t *agents_discovery_json(const struct agent_rec *r);
/* Sets r->ngpus to n with every GPU's health fresh; false out of memory. */
bool agents_gpus_reset(struct agent_rec *r, int n);
/* r's gpu_events (a new reference: an empty array when none). */
json_t *agents_events(const struct agent_rec *r);
/* Counts an XID event of GPU g (< TOPO_MAX_GPUS) and adds ev to r's
 * gpu_events (the oldest dropped past AGENT_MAX_EVENTS); takes ev. */
void agents_xid_event(struct agent_rec *r, int g, json_t *ev);
/* XID events of GPU g reported since the start. */
static inline uint64_t agents_xids_count(const struct agent_rec *r, int g)
{
	return r->xids ? r->xids[g] : 0;
}
/* GPU g's health (g < r->ngpus), fresh when none was kept. */
const struct gpu_health *agents_gpu(const struct agent_rec *r, int g);
/* GPU g's health to change (every GPU's kept from now on); NULL out of memory. */
struct gpu_health *agents_gpu_w(struct agent_rec *r, int g);
/* Keeps a heartbeat's "gpus" (checked) on r; false out of memory. */
bool agents_keep_gpus(struct ctl_agents *a, struct agent_rec *r, const json_t *gpus);
/* Applies r's per-GPU health to the placer for fleet node idx (and, while
 * ready, names the GPUs out of service in r->reason). */
void agents_apply_gpus_rec(struct ctl *c, struct agent_rec *r, int idx);
/* One node's service state on the placer, as ctl_apply_usable sets every node's. */
void agents_apply_node(struct ctl *c, int idx);
/* Lowers the next lifecycle check to at. */
void agents_wake(struct ctl *c, int64_t at);

/* agents_api.c */
/* The type a joined node gets (labels.type, a matching built-in, or a
 * custom type from its discovery). */
enum sl_err agents_join_type(const struct fleet *f, const char *node, const json_t *labels,
			     const json_t *discovery, struct node_type *out, bool *custom,
			     struct sl_diag *d) SL_MUST_USE;

#endif
