/* discovery.c - building a discovery, comparing it with a declared node type,
 * and finding the built-in type it is.
 *
 * A discovery is a node type plus per-GPU facts. All three sources (NVML, a
 * `nvidia-smi topo -m` matrix, a built-in type) build it the same way:
 * discovery_begin, the topo.h builders, discovery_end. The builders need a
 * GPU model to derive bandwidths; a GPU the catalog does not know (a V100, an
 * RTX 4090) is built against a generic NVLink model whose only job is to make
 * the NVSwitch test honest (no NVIDIA GPU has more than 18 NVLinks, so a GPU
 * showing more bonded links than that in total sits behind NVSwitch chips),
 * and its bandwidths are dropped at the end: kinds and counts are facts,
 * GB/s for an unknown part would be invention.
 *
 * The comparison says "weaker" in the order an operator would look: GPU count,
 * model, memory, NVLinks per GPU, then each pair's link. A drained node's
 * reason is the first difference found.
 */
#include "discovery.h"

#include <stdio.h>
#include <string.h>

/* The most NVLinks an NVIDIA GPU has (H100, B200, B300: 18) at 50 GB/s. */
static const struct gpu_model generic_model = {
	"unknown", "nvidia", 0, IC_NVLINK, 0, 18 * 50, 50, 4, 0, 0,
};

static void copy_str(char *dst, size_t n, const char *src)
{
	size_t len = src ? strlen(src) : 0;
	if (len >= n)
		len = n - 1;
	if (len)
		memcpy(dst, src, len);
	dst[len] = 0;
}

enum sl_err discovery_begin(struct discovery *out, const char *source,
			    const struct gpu_model *model, int ngpus, const int8_t *numa,
			    struct sl_diag *d)
{
	enum sl_err e;

	if (!out)
		return sl_diag_set(d, SL_EINVAL, "discovery: no storage given");
	memset(out, 0, sizeof(*out));
	if (ngpus > TOPO_MAX_GPUS)
		return sl_diag_set(d, SL_ELIMIT, "found %d GPUs; at most %d per node supported",
				   ngpus, TOPO_MAX_GPUS);
	e = topo_type_init(&out->type, "discovered", model ? model : &generic_model, ngpus,
			   0, 0, numa, d);
	if (e)
		return e;
	copy_str(out->source, sizeof(out->source), source);
	for (int i = 0; i < TOPO_MAX_GPUS; i++)
		out->gpus[i].nvlinks_up = -1;
	return SL_OK;
}

/* The NVLinks GPU g has according to the pairs of t. */
static int type_gpu_links(const struct node_type *t, int g)
{
	const struct gpu_model *m = t->gpu;
	int sum = 0, bonded = 0;
	bool nvs = false;

	for (int b = 0; b < t->ngpus; b++) {
		const struct topo_link *l = &t->link[g][b];
		if (b == g)
			continue;
		if (l->kind == LINK_NVSWITCH) {
			nvs = true;
			if (l->count > bonded)
				bonded = l->count;
		} else if (l->kind == LINK_NVLINK) {
			sum += l->count;
		}
	}
	if (nvs) {
		if (bonded > 0)
			return bonded;
		return m && m->link_gbps > 0 ? m->ic_gbps / m->link_gbps : 0;
	}
	return sum;
}

void discovery_end(struct discovery *out)
{
	struct node_type *t = &out->type;

	for (int g = 0; g < t->ngpus; g++) {
		struct disc_gpu *x = &out->gpus[g];
		if (x->nvlinks_up < 0)
			x->nvlinks_up = type_gpu_links(t, g);
		for (int b = 0; b < t->ngpus; b++)
			if (b != g && t->link[g][b].kind == LINK_NVSWITCH)
				x->nvswitch = true;
	}
	if (t->gpu == &generic_model) {
		t->gpu = NULL;
		for (int a = 0; a < t->ngpus; a++)
			for (int b = 0; b < t->ngpus; b++)
				t->link[a][b].gbps = 0;
	}
}

enum sl_err discovery_from_type(struct discovery *out, const struct node_type *t,
				struct sl_diag *d)
{
	struct discovery tmp;
	enum sl_err e;

	if (!t || !t->gpu || !out)
		return sl_diag_set(d, SL_EINVAL, "discovery: node type has no GPU model");
	e = discovery_begin(&tmp, "simulate", t->gpu, t->ngpus, t->numa, d);
	if (e)
		return e;
	tmp.type = *t;
	for (int g = 0; g < t->ngpus; g++) {
		copy_str(tmp.gpus[g].name, sizeof(tmp.gpus[g].name), t->gpu->name);
		tmp.gpus[g].mem_mib = (int64_t)t->gpu->mem_gib * 1024;
	}
	discovery_end(&tmp);
	*out = tmp;
	return SL_OK;
}

/* GPU columns of the matrix header: consecutive GPU0, GPU1, ... on the first
 * line whose first token is GPU0. 0 when there is no header. */
static int matrix_gpu_count(const char *text)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		const char *end = nl ? nl : p + strlen(p);
		const char *q = p;
		int n = 0;

		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (end - q >= 4 && memcmp(q, "GPU0", 4) == 0 &&
		    (q + 4 == end || q[4] == ' ' || q[4] == '\t' || q[4] == '\r')) {
			for (;;) {
				char want[16];
				int len = snprintf(want, sizeof(want), "GPU%d", n);
				while (q < end && (*q == ' ' || *q == '\t' || *q == '\r'))
					q++;
				if (end - q < len || memcmp(q, want, (size_t)len) != 0 ||
				    (q + len < end && q[len] != ' ' && q[len] != '\t' &&
				     q[len] != '\r'))
					return n;
				q += len;
				n++;
				if (n > TOPO_MAX_GPUS)
					return n;
			}
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

enum sl_err discovery_from_matrix(struct discovery *out, const char *model,
				  const char *text, struct sl_diag *d)
{
	const struct gpu_model *m = NULL;
	struct discovery tmp; /* *out changes only on success */
	int n;
	enum sl_err e;

	if (!out || !text)
		return sl_diag_set(d, SL_EINVAL, "discovery: no matrix text");
	if (model && *model && strcmp(model, "unknown") != 0) {
		m = catalog_gpu_find(model);
		if (!m) {
			sl_diag_set(d, SL_EINVAL, "unknown GPU model '%.64s'", model);
			sl_diag_hint(d, "use a catalog model name (h100-sxm, a100-sxm, l40s, ...) or "
				     "leave the model out to report it as unknown");
			return SL_EINVAL;
		}
	}
	n = matrix_gpu_count(text);
	if (n == 0)
		return sl_diag_at(d, SL_EPARSE, 1, 1,
				  "no matrix header found; expected a line starting with GPU0 "
				  "(the output of `nvidia-smi topo -m`)");
	if (n > TOPO_MAX_GPUS)
		return sl_diag_set(d, SL_ELIMIT, "the matrix has more than %d GPU columns; at "
				   "most %d GPUs per node supported", TOPO_MAX_GPUS,
				   TOPO_MAX_GPUS);
	e = discovery_begin(&tmp, "nvidia-smi", m, n, NULL, d);
	if (!e)
		e = topo_parse_matrix(&tmp.type, text, d);
	if (e)
		return e;
	/* Names from the model; memory stays 0: the matrix does not say. */
	for (int g = 0; g < n && m; g++)
		copy_str(tmp.gpus[g].name, sizeof(tmp.gpus[g].name), m->name);
	discovery_end(&tmp);
	*out = tmp;
	return SL_OK;
}

static const char *model_name(const struct node_type *t)
{
	return t->gpu ? t->gpu->name : "unknown";
}

/* "nvswitch", "nvlink x12", "pcie-switch". */
static void link_words(const struct topo_link *l, char *s, size_t n)
{
	if (l->kind == LINK_NVLINK || (l->kind == LINK_HCCS && l->count > 0))
		snprintf(s, n, "%s x%d", topo_link_kind_name((enum link_kind)l->kind), l->count);
	else
		snprintf(s, n, "%s", topo_link_kind_name((enum link_kind)l->kind));
}

static bool pair_weaker(const struct topo_link *got, const struct topo_link *want)
{
	if (got->kind != want->kind)
		return got->kind < want->kind;
	if (got->kind == LINK_NVLINK || got->kind == LINK_HCCS)
		return got->count < want->count;
	return false;
}

bool discovery_weaker(const struct discovery *disc, const struct node_type *declared,
		      char *reason, size_t n)
{
	const struct node_type *t;
	char a[32], b[32];

	if (reason && n > 0)
		reason[0] = 0;
	if (!disc || !declared || !declared->gpu) {
		if (reason)
			snprintf(reason, n, "no discovery or no declared type to compare");
		return true;
	}
	t = &disc->type;
	if (t->ngpus < declared->ngpus) {
		if (reason)
			snprintf(reason, n, "found %d GPUs; %s has %d", t->ngpus, declared->name,
				 declared->ngpus);
		return true;
	}
	if (!t->gpu || strcmp(t->gpu->name, declared->gpu->name) != 0) {
		if (reason)
			snprintf(reason, n, "GPU model is %s (\"%s\"); %s has %s", model_name(t),
				 disc->gpus[0].name, declared->name, declared->gpu->name);
		return true;
	}
	for (int g = 0; g < declared->ngpus; g++) {
		int64_t want = (int64_t)declared->gpu->mem_gib * 1024;
		int64_t mem = disc->gpus[g].mem_mib;
		if (mem > 0 && mem * 100 < want * (100 - DISC_MEM_TOLERANCE_PCT)) {
			if (reason)
				snprintf(reason, n, "GPU %d has %lld MiB of memory; %s has %d GiB "
					 "per GPU", g, (long long)mem, declared->name,
					 declared->gpu->mem_gib);
			return true;
		}
	}
	for (int g = 0; g < declared->ngpus; g++) {
		int want = type_gpu_links(declared, g), got = disc->gpus[g].nvlinks_up;
		if (got >= 0 && got < want) {
			if (reason)
				snprintf(reason, n, "GPU %d has %d NVLink links up; %s has %d", g,
					 got, declared->name, want);
			return true;
		}
	}
	for (int x = 0; x < declared->ngpus; x++)
		for (int y = x + 1; y < declared->ngpus; y++) {
			const struct topo_link *got = &t->link[x][y], *want = &declared->link[x][y];
			if (!pair_weaker(got, want))
				continue;
			if (reason) {
				link_words(got, a, sizeof(a));
				link_words(want, b, sizeof(b));
				if (got->kind < LINK_HCCS && want->kind >= LINK_NVLINK)
					snprintf(reason, n, "GPU %d has no NVLink to GPU %d (%s); %s "
						 "has %s", x, y, a, declared->name, b);
				else
					snprintf(reason, n, "GPUs %d and %d are linked by %s; %s has %s",
						 x, y, a, declared->name, b);
			}
			return true;
		}
	return false;
}

static bool fabric_kind(int k)
{
	return k == LINK_NVSWITCH || k == LINK_NVLINK || k == LINK_HCCS;
}

static bool fabric_same(const struct topo_link *x, const struct topo_link *y)
{
	if (!fabric_kind(x->kind) && !fabric_kind(y->kind))
		return true;
	if (x->kind != y->kind)
		return false;
	return x->kind == LINK_NVSWITCH || x->count == y->count;
}

enum sl_err discovery_match_builtin(const struct discovery *disc, struct node_type *out)
{
	const struct node_type *t;
	struct node_type cand;

	if (!disc || !out)
		return SL_EINVAL;
	t = &disc->type;
	if (!t->gpu)
		return SL_ENOTFOUND;
	for (int i = 0; i < topo_builtin_count(); i++) {
		bool same = true;
		if (topo_builtin(topo_builtin_name(i), &cand) != SL_OK)
			continue;
		if (cand.ngpus != t->ngpus || strcmp(cand.gpu->name, t->gpu->name) != 0)
			continue;
		for (int a = 0; a < t->ngpus && same; a++)
			for (int b = a + 1; b < t->ngpus && same; b++)
				same = fabric_same(&t->link[a][b], &cand.link[a][b]);
		if (same && !discovery_weaker(disc, &cand, NULL, 0)) {
			*out = cand;
			return SL_OK;
		}
	}
	return SL_ENOTFOUND;
}
