/* inst_int.h - the instance supervisor's insides (inst.h), shared by inst.c
 * (desired state, supervision, report), inst_spec.c (the item), inst_store.c
 * (state.json), inst_ops.c (the op children: podman, disks), inst_ssh.c
 * (keys, sshd_config), inst_ports.c (host ports) and inst_migrate.c.
 * Private to src/agent. */
#ifndef SL_AGENT_INST_INT_H
#define SL_AGENT_INST_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "inst.h"
#include "state.h"
#include "work.h"

enum inst_want { WANT_RUN, WANT_STOP, WANT_REMOVE, WANT_EXPORT };

/* One item of the work answer's "instances" (contract). */
struct inst_spec {
	char id[WORK_ID_MAX];
	int node_rank;
	int64_t epoch;
	char lease[WORK_ID_MAX];   /* "" in no-gpu mode */
	enum inst_want want;
	/* tenant, image, env, gpus, nics, stop_grace_s, parsed as a job item's */
	struct work_spec w;
	int64_t cpus_milli, mem_mib; /* 0: no limit */
	bool host_network;
	char **keys;
	size_t nkeys;
	int ports[INST_PORTS_MAX];
	int nports;
	int64_t volume_gib;
	char migrate_from[WORK_ID_MAX]; /* "" : none */
};

/* Parses one item strictly (unknown fields allowed); d names the field. */
enum sl_err inst_spec_from_json(const json_t *o, struct inst_spec *out,
				struct sl_diag *d) SL_MUST_USE;
void inst_spec_release(struct inst_spec *s);
const char *inst_want_name(enum inst_want w);

enum inst_phase {
	PH_NONE,      /* no container yet on this node */
	PH_RUNNING,
	PH_STOPPED,
	PH_FAILED,    /* the start of failed_epoch failed (error says why) */
	PH_REMOVED,
	PH_EXPORTED,
};

enum inst_op { OP_NONE, OP_UP, OP_DOWN, OP_REMOVE, OP_EXPORT };

#define INST_ERROR_MAX 512
#define INST_CFG_MAX 20

struct inst {
	struct inst_spec spec;    /* the desired state, newest epoch */
	json_t *item;             /* spec's JSON, as received (state.json) */
	enum inst_phase phase;
	bool desired;             /* listed by the last desired state */
	bool reported;            /* a report with its final state reached the controller */
	char stopped_by[8];       /* "agent" | "guest" | "" */
	int64_t stop_epoch;       /* the epoch during which it stopped */
	int64_t failed_epoch;     /* -1: none */
	int64_t running_since, stopped_at; /* wall clock s; 0: not yet */
	int ssh_port;             /* host port of sshd (0: none yet) */
	int host_ports[INST_PORTS_MAX]; /* per spec.ports[i] */
	uint32_t uid_base;        /* container root's host id (0: none taken) */
	char cfg[INST_CFG_MAX];   /* config key of the created container ("" : none) */
	bool imported;            /* the migration's copy is in (migrate_from done) */
	/* the op in flight */
	enum inst_op op;
	pid_t op_pid;
	uint64_t op_ticks;
	bool op_child;            /* ours to waitpid (false: adopted) */
	bool recreate;            /* after this DOWN, UP again (the config changed) */
	/* the running container's conmon */
	pid_t conmon;
	uint64_t conmon_ticks;
	char error[INST_ERROR_MAX];
	char fingerprint[96];     /* "SHA256:..." of the host key ("" : none yet) */
};

struct inst_sup {
	char *dir, *storage;
	int port_lo, port_hi;
	char node[128];
	const struct engine *eng;
	const struct discovery *disc;
	char *server, *ca, *token;
	struct inst *v[INST_MAX];
	size_t n;
	bool dirty;
};

/* inst_store.c */
enum sl_err inst_save(struct inst_sup *s, struct inst *in, struct sl_diag *d) SL_MUST_USE;
/* Loads every instance dir (logged and skipped when unreadable). */
void inst_load_all(struct inst_sup *s);
void inst_free(struct inst *in);
const char *inst_phase_name(enum inst_phase p);

/* inst_ops.c */
/* The container's name (sl-ENGINE-ID). */
void inst_ctr_name(const struct inst_sup *s, const struct inst *in, char *buf, size_t n);
/* The config key the container of in's spec would be created with. */
void inst_cfg_key(const struct inst_sup *s, const struct inst *in, char *buf, size_t n);
/* Forks the op's child (setsid, fds closed, output to op.log). false when
 * fork failed (in->error says so). */
bool inst_op_spawn(struct inst_sup *s, struct inst *in, enum inst_op op);
/* `podman inspect` of the container: "running"/"exited"/... into status,
 * its conmon pid and config label; false when there is no such container. */
bool inst_inspect(const struct inst_sup *s, const struct inst *in, char *status, size_t n,
		  pid_t *conmon, char *cfg, size_t cn);
/* Runs argv (no shell), stdout into out (n bytes, NUL-terminated; may be
 * NULL), stderr to fd errfd (-1: /dev/null). Its exit status or -1. */
int inst_run(char *const argv[], char *out, size_t n, int errfd);
/* path of a file of the instance: STATE_DIR/instances/ID/REST. */
enum sl_err inst_path(const struct inst_sup *s, const struct inst *in, char *buf, size_t n,
		      const char *rest) SL_MUST_USE;

/* inst_ssh.c (run in the op child, except the fingerprint) */
enum sl_err inst_ssh_prepare(const struct inst_sup *s, const struct inst *in,
			     struct sl_diag *d) SL_MUST_USE;
/* "SHA256:..." of an OpenSSH public key line into out; false when it is not one. */
bool inst_ssh_fingerprint(const char *pub_line, char *out, size_t n);
/* The host key's fingerprint from ssh/ssh_host_ed25519_key.pub into in. */
void inst_ssh_load_fingerprint(const struct inst_sup *s, struct inst *in);

/* inst_ports.c */
/* Gives in an sshd port and one host port per renter port from the range,
 * keeping the ones it has where they are still free. false (error set) when
 * the range has no free port left. */
bool inst_ports_assign(struct inst_sup *s, struct inst *in);

/* inst_migrate.c (op children) */
int inst_export_main(struct inst_sup *s, struct inst *in, int errfd);
int inst_import_main(struct inst_sup *s, struct inst *in, int errfd);

/* In the op child (inst_ops.c): podman's common words (podman --runtime R
 * --cgroup-manager cgroupfs), the op's failure (its reason to op.err and the
 * log; returns 1), what it does now (op.progress), the data disk made and
 * mounted (its mount point into mnt, "" without one; 0 or 1). */
#define PODMAN(s, ...)                                                                   \
	{ (char *)engine_podman(s->eng), "--runtime", (char *)engine_runtime(s->eng),      \
	  "--cgroup-manager", "cgroupfs", __VA_ARGS__, NULL }
extern int inst_op_errfd;
int inst_fail(const struct inst_sup *s, const struct inst *in, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void inst_progress(const struct inst_sup *s, const struct inst *in, const char *text);
int inst_disk_up(const struct inst_sup *s, const struct inst *in, char *mnt, size_t n);
bool inst_mounted(const char *mnt, const char *parent);
/* localhost/suanli-instance/ENGINE-ID:system, the image of its system disk
 * (the engine's name in it: agents sharing a host never touch each other's). */
void inst_sys_image(const struct inst_sup *s, const struct inst *in, char *buf, size_t n);

/* The data disk (inst_ops.c): STORAGE/ID.img mounted at STORAGE/ID. */
enum sl_err inst_disk_paths(const struct inst_sup *s, const struct inst *in, char *img,
			    char *mnt, size_t n, struct sl_diag *d) SL_MUST_USE;

#endif
