/* instance_billing.c - an instance's money (docs/instances.md, "Money"):
 * three meters of billing (billing.h) per instance, and the balance rules
 * that concern instances.
 *   ID.gpu:   the lease's GPUs, at the lease's plan and model price, from
 *             the instant every node reports the container running to the
 *             stop (asked, idle, balance, the guest's own, the lease's end);
 *             image pulls and failed starts are never in it;
 *   ID.nogpu: a start --no-gpu, at the "no-gpu" price (per instance-hour);
 *   ID.disk:  the data disk, volume_gib GiB at the "storage" price (per
 *             GiB-month of the billing zone's calendar month), from creation
 *             to release, running or stopped.
 * Every run is also kept on the instance ("billing" of its answer), so an
 * invoice can be checked from the instance's own instants.
 * Balance: the tenant's running instances stop with its leases after the
 * grace period (instances_balance_stop, from billing.c); a stopped instance
 * whose tenant stays below zero is released after the retention
 * (suanlid --instance-retention, 15 days by default), counted from the later
 * of the stop and the instant the balance went below zero. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_log.h"
#include "billing.h"
#include "buf.h"
#include "instances_int.h"
#include "log.h"

static void meter_of(const struct instance *in, const char *kind, char *id, size_t n,
		     struct billing_meter *m)
{
	snprintf(id, n, "%s.%s", in->id, kind);
	memset(m, 0, sizeof(*m));
	m->id = id;
	m->tenant = in->tenant;
	m->site = in->gpu_site;
	m->region = in->gpu_region;
	m->model = "";
	if (!strcmp(kind, "gpu")) {
		m->plan = in->plan;
		m->model = in->gpu_model;
		m->units = in->gpus;
	} else if (!strcmp(kind, "nogpu")) {
		m->plan = PLAN_NOGPU;
		m->units = 1;
	} else {
		m->plan = PLAN_STORAGE;
		m->units = in->volume_gib;
	}
}

static void seg_open(struct inst_seg **sp, int *n, int *cap, int64_t at, int units)
{
	if (*n > 0 && !(*sp)[*n - 1].to_ns)
		return; /* already open */
	if (*n == INST_MAX_SEGS || sl_grow(sp, cap, *n + 1, INST_MAX_SEGS)) {
		/* full (or out of memory): the oldest run goes, as the answer's
		 * bounded list always did */
		if (!*n)
			return;
		memmove(*sp, *sp + 1, (size_t)(*n - 1) * sizeof(**sp));
		(*n)--;
	}
	(*sp)[(*n)++] = (struct inst_seg){at, 0, units};
}

static void seg_close(struct inst_seg *s, int n, int64_t at)
{
	if (n > 0 && !s[n - 1].to_ns)
		s[n - 1].to_ns = at < s[n - 1].from_ns ? s[n - 1].from_ns : at;
}

void inst_bill_gpu_on(struct ctl *c, struct instance *in, int64_t at)
{
	char id[INST_ID_LEN + 8];
	struct billing_meter m;
	meter_of(in, "gpu", id, sizeof(id), &m);
	(void)billing_meter_on(c, &m, at);
	seg_open(&in->gpu_segs, &in->ngpu_segs, &in->capgpu_segs, at, in->gpus);
}

void inst_bill_gpu_off(struct ctl *c, struct instance *in, int64_t at)
{
	char id[INST_ID_LEN + 8];
	snprintf(id, sizeof(id), "%s.gpu", in->id);
	billing_meter_off(c, id, at);
	seg_close(in->gpu_segs, in->ngpu_segs, at);
}

void inst_bill_nogpu_on(struct ctl *c, struct instance *in, int64_t at)
{
	char id[INST_ID_LEN + 8];
	struct billing_meter m;
	meter_of(in, "nogpu", id, sizeof(id), &m);
	(void)billing_meter_on(c, &m, at);
	seg_open(&in->nogpu_segs, &in->nnogpu_segs, &in->capnogpu_segs, at, 1);
}

void inst_bill_nogpu_off(struct ctl *c, struct instance *in, int64_t at)
{
	char id[INST_ID_LEN + 8];
	snprintf(id, sizeof(id), "%s.nogpu", in->id);
	billing_meter_off(c, id, at);
	seg_close(in->nogpu_segs, in->nnogpu_segs, at);
}

void inst_bill_disk_on(struct ctl *c, struct instance *in, int64_t at)
{
	if (in->volume_gib < 1)
		return;
	char id[INST_ID_LEN + 8];
	struct billing_meter m;
	meter_of(in, "disk", id, sizeof(id), &m);
	(void)billing_meter_on(c, &m, at);
	in->disk_from_ns = at;
}

void inst_bill_disk_end(struct ctl *c, struct instance *in, int64_t at)
{
	char id[INST_ID_LEN + 8];
	if (in->volume_gib >= 1 && in->disk_from_ns && !in->disk_to_ns) {
		snprintf(id, sizeof(id), "%s.disk", in->id);
		billing_meter_end(c, id, at);
		in->disk_to_ns = at;
	}
	/* The GPU and no-GPU meters end too: nothing runs any more. */
	snprintf(id, sizeof(id), "%s.gpu", in->id);
	billing_meter_end(c, id, at);
	snprintf(id, sizeof(id), "%s.nogpu", in->id);
	billing_meter_end(c, id, at);
}

json_t *inst_cost_json(struct ctl *c, const struct instance *in)
{
	char id[INST_ID_LEN + 8];
	snprintf(id, sizeof(id), "%s.gpu", in->id);
	int64_t g = billing_meter_amount(c, id);
	snprintf(id, sizeof(id), "%s.nogpu", in->id);
	int64_t n = billing_meter_amount(c, id);
	snprintf(id, sizeof(id), "%s.disk", in->id);
	int64_t s = billing_meter_amount(c, id);
	struct billing_meter m;
	meter_of(in, "disk", id, sizeof(id), &m);
	int64_t per_day = in->disk_to_ns || in->volume_gib < 1 ? 0 : billing_meter_per_day(c, &m);
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:s}", "gpu_fen", (json_int_t)g, "no_gpu_fen",
			 (json_int_t)n, "storage_fen", (json_int_t)s, "total_fen", (json_int_t)(g + n + s),
			 "storage_fen_per_day", (json_int_t)per_day, "currency", billing_currency(c));
}

static int64_t release_at(struct ctl *c, const struct instance *in)
{
	int64_t from = in->broke_since_ns > in->stopped_ns ? in->broke_since_ns : in->stopped_ns;
	return from + c->instances->retention_ns;
}

void inst_notice(struct ctl *c, const struct instance *in, char *buf, size_t n)
{
	buf[0] = 0;
	if (in->state == IS_RELEASED || in->state == IS_RELEASING)
		return;
	if (!in->broke_since_ns && billing_available(c, in->tenant) >= 0 &&
	    !billing_grace_end_ns(c, in->tenant))
		return;
	char t1[32], t2[32];
	int64_t grace = billing_grace_end_ns(c, in->tenant);
	if (inst_state_live(in->state) || in->state == IS_WAITING) {
		if (grace) {
			ctl_time_fmt(grace, t1);
			snprintf(buf, n, "balance below zero: this instance stops at %s (end of the grace "
				 "period) unless the tenant tops up; its disks are kept", t1);
		} else {
			snprintf(buf, n, "balance below zero: this instance stops when the grace period "
				 "ends unless the tenant tops up; its disks are kept");
		}
		return;
	}
	ctl_time_fmt(in->stopped_ns, t1);
	ctl_time_fmt(release_at(c, in), t2);
	snprintf(buf, n, "balance below zero: stopped at %s; released (containers and the data disk "
		 "deleted) at %s unless the tenant tops up; the data disk is still billed until then", t1, t2);
}

void inst_bill_tick(struct ctl *c)
{
	struct ctl_instances *is = c->instances;
	char why[INST_REASON_MAX];
	for (int i = 0; i < is->n && !c->fatal; i++) {
		struct instance *in = is->v[i];
		if (!in || !in->tracked || in->state == IS_RELEASING || in->state == IS_RELEASED)
			continue;
		bool broke = billing_available(c, in->tenant) < 0 || billing_grace_end_ns(c, in->tenant);
		if (broke && !in->broke_since_ns) {
			in->broke_since_ns = c->now_ns;
			inst_save(c, in);
		} else if (!broke && in->broke_since_ns) {
			in->broke_since_ns = 0;
			inst_save(c, in);
		}
		if (!broke || (in->state != IS_STOPPED && in->state != IS_FAILED))
			continue;
		if (c->now_ns < release_at(c, in))
			continue;
		snprintf(why, sizeof(why), "released: the balance stayed below zero for the retention "
			 "(%llds) after the stop", (long long)(is->retention_ns / 1000000000));
		inst_bill_disk_end(c, in, c->now_ns);
		inst_lease_release(c, in, why);
		if (inst_event(c, in, IE_RELEASE, why))
			audit_log_system(c, "instance.release", in->tenant, in->id, "retention");
	}
}

json_t *instances_balance_json(struct ctl *c, const char *tenant)
{
	struct ctl_instances *is = c->instances;
	json_t *a = json_array();
	int64_t per_day = 0;
	char notice[512] = "";
	for (int i = 0; a && is && i < is->n; i++) {
		const struct instance *in = is->v[i];
		if (!in || strcmp(in->tenant, tenant) || in->state == IS_RELEASED)
			continue;
		json_t *cost = inst_cost_json(c, in);
		json_int_t pd = json_integer_value(json_object_get(cost, "storage_fen_per_day"));
		per_day += pd;
		char nt[512];
		inst_notice(c, in, nt, sizeof(nt));
		if (nt[0] && !notice[0])
			snprintf(notice, sizeof(notice), "%s: %.480s", in->id, nt);
		json_array_append_new(a, json_pack("{s:s, s:s, s:i, s:I, s:s, s:o}", "id", in->id,
						   "state", inst_state_name(in->state), "volume_gib",
						   in->volume_gib, "storage_fen_per_day", pd, "notice", nt,
						   "cost", cost));
	}
	if (!a || !json_array_size(a)) {
		json_decref(a);
		return NULL;
	}
	return json_pack("{s:o, s:I, s:s}", "instances", a, "instances_fen_per_day",
			 (json_int_t)per_day, "instances_notice", notice);
}
