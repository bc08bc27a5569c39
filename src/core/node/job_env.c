/* job_env.c - a rank's environment and the checks on a job request
 * (job_env.h). Everything is built from the placement and the node types, so
 * the same job always gets the same variables on every controller. */
#include "job_env.h"

#include "lease_net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const restart_names[] = {"never", "on-failure", "always"};

const char *job_restart_name(enum job_restart r)
{
	return (unsigned)r < JOB_RESTART__COUNT ? restart_names[r] : "?";
}

int job_restart_parse(const char *s)
{
	for (int i = 0; s && i < JOB_RESTART__COUNT; i++)
		if (!strcmp(s, restart_names[i]))
			return i;
	return -1;
}

bool job_env_key_valid(const char *k)
{
	size_t n = k ? strlen(k) : 0;
	if (n == 0 || n > JOB_ENV_KEY_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = k[i];
		bool alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
		if (!alpha && (i == 0 || ch < '0' || ch > '9'))
			return false;
	}
	return true;
}

/* What the controller (job_env_build) and the agent (NCCL_TOPO_FILE) set. */
static const char *const reserved[] = {
	"MASTER_ADDR",   "MASTER_PORT",          "NNODES",
	"NODE_RANK",     "NPROC_PER_NODE",       "CUDA_VISIBLE_DEVICES",
	"ASCEND_RT_VISIBLE_DEVICES", "NCCL_IB_HCA", "NCCL_TOPO_FILE",
};

bool job_env_key_reserved(const char *k)
{
	if (!k || !strncmp(k, "SUANLI_", 7))
		return true;
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (!strcmp(k, reserved[i]))
			return true;
	return false;
}

enum sl_err job_argv_check(const json_t *argv, struct sl_diag *d)
{
	if (!json_is_array(argv) || json_array_size(argv) == 0) {
		sl_diag_hint(d, "give the command and its arguments: \"argv\": [\"python3\", \"train.py\"]");
		return sl_diag_set(d, SL_EINVAL, "field 'argv' must be a non-empty array of strings");
	}
	if (json_array_size(argv) > JOB_MAX_ARGS)
		return sl_diag_set(d, SL_ELIMIT, "field 'argv' has %zu entries; at most %d",
				   json_array_size(argv), JOB_MAX_ARGS);
	size_t total = 0, i;
	const json_t *v;
	json_array_foreach(argv, i, v) {
		if (!json_is_string(v))
			return sl_diag_set(d, SL_EINVAL, "field 'argv[%zu]' must be a string", i);
		size_t n = json_string_length(v);
		if (i == 0 && n == 0)
			return sl_diag_set(d, SL_EINVAL, "field 'argv[0]' (the program) is empty");
		if (memchr(json_string_value(v), 0, n))
			return sl_diag_set(d, SL_EINVAL, "field 'argv[%zu]' contains a NUL byte", i);
		total += n + 1;
	}
	if (total > JOB_MAX_ARGV_BYTES)
		return sl_diag_set(d, SL_ELIMIT, "field 'argv' holds %zu bytes; at most %u", total,
				   JOB_MAX_ARGV_BYTES);
	return SL_OK;
}

enum sl_err job_env_check(const json_t *env, struct sl_diag *d)
{
	if (!env)
		return SL_OK;
	if (!json_is_object(env))
		return sl_diag_set(d, SL_EINVAL, "field 'env' must be an object of strings");
	if (json_object_size(env) > JOB_MAX_ENV)
		return sl_diag_set(d, SL_ELIMIT, "field 'env' has %zu entries; at most %d",
				   json_object_size(env), JOB_MAX_ENV);
	size_t total = 0;
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)env, k, v) {
		if (!job_env_key_valid(k)) {
			sl_diag_hint(d, "names are letters, digits and '_', not starting with a digit");
			return sl_diag_set(d, SL_EINVAL, "field 'env': '%.64s' is not a variable name", k);
		}
		if (job_env_key_reserved(k)) {
			sl_diag_hint(d, "suanli sets it for every rank (docs/jobs.md lists them)");
			return sl_diag_set(d, SL_EINVAL, "field 'env': %.64s may not be set by a job", k);
		}
		if (!json_is_string(v))
			return sl_diag_set(d, SL_EINVAL, "field 'env.%.64s' must be a string", k);
		size_t n = json_string_length(v);
		if (memchr(json_string_value(v), 0, n))
			return sl_diag_set(d, SL_EINVAL, "field 'env.%.64s' contains a NUL byte", k);
		total += strlen(k) + n + 2;
	}
	if (total > JOB_MAX_ENV_BYTES)
		return sl_diag_set(d, SL_ELIMIT, "field 'env' holds %zu bytes; at most %u", total,
				   JOB_MAX_ENV_BYTES);
	return SL_OK;
}

int job_master_port(uint64_t seq)
{
	return JOB_MASTER_PORT_BASE + (int)(seq % JOB_MASTER_PORT_SPAN);
}

/* Appends s to buf (comma-separated); false when it does not fit. */
static bool list_add(char *buf, size_t n, size_t *off, const char *s)
{
	int w = snprintf(buf + *off, n - *off, "%s%s", *off ? "," : "", s);
	if (w < 0 || (size_t)w >= n - *off)
		return false;
	*off += (size_t)w;
	return true;
}

static bool set_str(json_t *o, const char *k, const char *v)
{
	return json_object_set_new(o, k, json_string(v)) == 0;
}

static bool set_int(json_t *o, const char *k, long long v)
{
	char b[32];
	snprintf(b, sizeof(b), "%lld", v);
	return set_str(o, k, b);
}

/* Rank i's fabric address and block (lease_net.h); false when it has none. */
static bool rank_net(const struct job_env_in *in, int i, uint32_t *addr, char *block, size_t n)
{
	const struct job_env_node *nd = &in->nodes[i];
	struct lease_pool p;
	if (in->nnodes < 2 || !nd->pool || !nd->pool[0] || !nd->type || !nd->gpus ||
	    __builtin_popcount(nd->gpus) >= nd->type->ngpus ||
	    lease_pool_parse(nd->pool, &p, NULL) != SL_OK)
		return false;
	return lease_net_addr(&p, nd->type->ngpus, __builtin_ctz(nd->gpus), in->seq, addr, block, n);
}

enum sl_err job_env_net(const struct job_env_in *in, int rank, json_t **net, struct sl_diag *d)
{
	char ip[LEASE_NET_ADDR_MAX], block[LEASE_NET_CIDR_MAX];
	uint32_t a;
	*net = NULL;
	if (!in || rank < 0 || rank >= in->nnodes || !in->nodes)
		return sl_diag_set(d, SL_EINVAL, "rank %d is not one of the job's %d", rank,
				   in ? in->nnodes : 0);
	if (!rank_net(in, rank, &a, NULL, 0))
		return SL_OK;
	lease_ip_format(a, ip, sizeof(ip));
	json_t *peers = json_array(), *o = json_pack("{s:s}", "addr", ip);
	bool ok = peers && o;
	for (int i = 0; ok && i < in->nnodes; i++) {
		const struct job_env_node *nd = &in->nodes[i];
		uint32_t pa;
		if (rank_net(in, i, &pa, block, sizeof(block))) {
			ok = json_array_append_new(peers, json_string(block)) == 0;
		} else if (nd->type && __builtin_popcount(nd->gpus) >= nd->type->ngpus && nd->addr &&
			   lease_ip_parse(nd->addr, &pa)) {
			snprintf(block, sizeof(block), "%s/32", nd->addr);
			ok = json_array_append_new(peers, json_string(block)) == 0;
		}
	}
	if (!ok || json_object_set_new(o, "peers", peers) != 0) {
		json_decref(o);
		if (!ok)
			json_decref(peers);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	*net = o;
	return SL_OK;
}

enum sl_err job_env_build(const struct job_env_in *in, int rank, json_t **env_out,
			  json_t **gpus_out, json_t **nics_out, struct sl_diag *d)
{
	*env_out = *gpus_out = *nics_out = NULL;
	if (!in || rank < 0 || rank >= in->nnodes || !in->nodes)
		return sl_diag_set(d, SL_EINVAL, "rank %d is not one of the job's %d", rank,
				   in ? in->nnodes : 0);
	const struct job_env_node *me = &in->nodes[rank], *m0 = &in->nodes[0];
	if (!me->gpus || !me->type)
		return sl_diag_set(d, SL_EINVAL, "rank %d has no GPUs", rank);
	json_t *env = json_object(), *gpus = json_array(), *nics = json_array();
	bool ok = env && gpus && nics;
	char list[4096];
	size_t off = 0;
	/* Node names are at most 63 bytes (fleet.h); 4096 bytes hold ~60 of
	 * them, so larger jobs get the list in a second, bigger buffer. */
	size_t need = 1;
	for (int i = 0; i < in->nnodes; i++)
		need += strlen(in->nodes[i].name) + 1;
	char *nl = need <= sizeof(list) ? list : malloc(need);
	ok = ok && nl;
	for (int i = 0; ok && i < in->nnodes; i++)
		ok = list_add(nl, need <= sizeof(list) ? sizeof(list) : need, &off, in->nodes[i].name);
	ok = ok && set_str(env, "SUANLI_NODE_LIST", nl);
	if (nl && nl != list)
		free(nl);
	char fab[LEASE_NET_ADDR_MAX];
	uint32_t fa;
	if (rank_net(in, 0, &fa, NULL, 0)) /* rank 0's routable container address */
		lease_ip_format(fa, fab, sizeof(fab));
	else
		snprintf(fab, sizeof(fab), "%s", "");
	if (rank_net(in, rank, &fa, NULL, 0))
		ok = ok && set_str(env, "GLOO_SOCKET_IFNAME", LEASE_NET_IFNAME) &&
		     set_str(env, "NCCL_SOCKET_IFNAME", LEASE_NET_IFNAME);
	ok = ok && set_str(env, "MASTER_ADDR", fab[0] ? fab : m0->addr && m0->addr[0] ? m0->addr : m0->name) &&
	     set_int(env, "MASTER_PORT", job_master_port(in->seq)) &&
	     set_int(env, "NNODES", in->nnodes) && set_int(env, "NODE_RANK", rank) &&
	     set_int(env, "NPROC_PER_NODE", __builtin_popcount(me->gpus)) &&
	     set_str(env, "SUANLI_LEASE", in->lease) && set_str(env, "SUANLI_JOB", in->job);
	off = 0;
	for (int g = 0; ok && g < TOPO_MAX_GPUS; g++)
		if (me->gpus & ((gpumask_t)1 << g)) {
			char b[8];
			snprintf(b, sizeof(b), "%d", g);
			ok = list_add(list, sizeof(list), &off, b) &&
			     json_array_append_new(gpus, json_integer(g)) == 0;
		}
	bool ascend = me->type->gpu && me->type->gpu->vendor &&
		      !strcmp(me->type->gpu->vendor, "huawei");
	ok = ok && set_str(env, ascend ? "ASCEND_RT_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES", list);
	/* "=name,name": NCCL matches exact names with the leading '=' (without
	 * it, mlx5_1 would also select mlx5_10..mlx5_19). */
	off = 0;
	list[0] = 0;
	for (int k = 0; ok && k < me->type->nnics && k < TOPO_MAX_NICS; k++) {
		const struct topo_nic *nic = &me->type->nics[k];
		if (!(nic->gpus & me->gpus))
			continue;
		ok = list_add(list, sizeof(list), &off, nic->name) &&
		     json_array_append_new(nics, json_string(nic->name)) == 0;
	}
	if (ok && off && !ascend) {
		char hca[sizeof(list) + 1];
		snprintf(hca, sizeof(hca), "=%s", list);
		ok = set_str(env, "NCCL_IB_HCA", hca);
	}
	const char *k;
	const json_t *v;
	if (ok && in->user_env)
		json_object_foreach((json_t *)in->user_env, k, v)
			if (ok && json_is_string(v) && !job_env_key_reserved(k))
				ok = json_object_set(env, k, (json_t *)v) == 0;
	if (!ok) {
		json_decref(env);
		json_decref(gpus);
		json_decref(nics);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	*env_out = env;
	*gpus_out = gpus;
	*nics_out = nics;
	return SL_OK;
}
