/* sim.c - the saturation experiment and the time replay of sim.h.
 *
 * Both drive the placer exactly as the controller does: placer_place_quiet,
 * then placer_claim (and placer_release when a pod ends). The random stream is
 * splitmix64 from the seed, local to the call. */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n) without modulo bias. */
static int rand_below(uint64_t *s, int n)
{
	uint64_t lim = UINT64_MAX - UINT64_MAX % (uint64_t)n;
	uint64_t x;
	do
		x = splitmix64(s);
	while (x >= lim);
	return (int)(x % (uint64_t)n);
}

int64_t sim_capacity_milli(const struct placer *p)
{
	const struct fleet *f = placer_fleet(p);
	int64_t cap = 0;
	for (int i = 0; i < f->nnodes; i++) {
		if (!placer_node_usable(p, i))
			continue;
		cap += (int64_t)fleet_node_type(f, i)->ngpus * 1000;
	}
	return cap;
}

/* Places and claims one pod. SL_OK placed, SL_ENOSPACE did not fit. */
static enum sl_err place_pod(struct placer *p, const struct sim_pod *pod,
			     struct placement *pl, struct sl_diag *d)
{
	struct place_request req;
	sim_pod_request(pod, &req);
	/* Models the fleet does not have: drop them; none left means no node. */
	int known = 0;
	for (int i = 0; i < req.nmodels; i++)
		if (fleet_find_model(placer_fleet(p), req.models[i]))
			req.models[known++] = req.models[i];
	if (req.nmodels > 0 && known == 0)
		return SL_ENOSPACE;
	req.nmodels = known;
	if (req.gpus == 0 && req.gpu_milli == 0 && req.cpus == 0 && req.mem_mib == 0) {
		pl->npicks = 0; /* asks for nothing: always "placed" */
		return SL_OK;
	}
	enum sl_err e = placer_place_quiet(p, &req, pl, d);
	if (e == SL_EINVAL)
		return SL_ENOSPACE; /* a shape this fleet cannot take, e.g. 3 GPUs over
				       2-GPU nodes: the pod fails like one that does not fit */
	if (e == SL_OK)
		e = placer_claim(p, pl, d);
	if (e != SL_OK && e != SL_ENOSPACE && d) {
		char msg[SL_DIAG_MSG];
		memcpy(msg, d->msg, sizeof(msg));
		msg[sizeof(msg) - 1] = '\0';
		sl_diag_set(d, e, "pod %s: %.400s", pod->name, msg);
	}
	return e;
}

enum sl_err sim_saturate_order(const struct sim_pod *pods, int n, int64_t cap, int inflate_pct,
			       uint64_t seed, bool shuffle, int **out, int *nout, struct sl_diag *d)
{
	*out = NULL;
	*nout = 0;
	if (!pods || n < 1)
		return sl_diag_set(d, SL_EINVAL, "no pods to replay");
	if (inflate_pct < 1 || inflate_pct > SIM_MAX_INFLATE_PCT)
		return sl_diag_set(d, SL_EINVAL, "inflate %d%% out of range 1..%d%%", inflate_pct,
				   SIM_MAX_INFLATE_PCT);
	int64_t trace_milli = 0;
	for (int i = 0; i < n; i++)
		trace_milli += sim_pod_milli(&pods[i]);
	uint64_t rng = seed;
	int cap_ord = n, cnt = 0;
	int *ord = malloc((size_t)cap_ord * sizeof(*ord));
	if (!ord)
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		ord[i] = i;
	if (shuffle)
		for (int i = n - 1; i > 0; i--) {
			int j = rand_below(&rng, i + 1), t = ord[i];
			ord[i] = ord[j];
			ord[j] = t;
		}
	int64_t arrived = 0;
	for (cnt = 0; cnt < n; cnt++)
		arrived += sim_pod_milli(&pods[ord[cnt]]);
	/* Then pods sampled uniformly until the demand reaches inflate x capacity. */
	while (trace_milli > 0 && arrived * 100 < (int64_t)inflate_pct * cap) {
		if (cnt == cap_ord) {
			if (cap_ord > INT32_MAX / 2) {
				free(ord);
				return sl_diag_set(d, SL_ELIMIT, "saturation stream too long");
			}
			int *g = realloc(ord, (size_t)cap_ord * 2 * sizeof(*ord));
			if (!g) {
				free(ord);
				return sl_diag_set(d, SL_ENOMEM, "out of memory");
			}
			ord = g;
			cap_ord *= 2;
		}
		ord[cnt] = rand_below(&rng, n);
		arrived += sim_pod_milli(&pods[ord[cnt++]]);
	}
	*out = ord;
	*nout = cnt;
	return SL_OK;
}

enum sl_err sim_saturate(struct placer *p, const struct sim_pod *pods, int n, int inflate_pct,
			 uint64_t seed, bool shuffle, struct sim_sat_result *r, struct sl_diag *d)
{
	memset(r, 0, sizeof(*r));
	if (!p)
		return sl_diag_set(d, SL_EINVAL, "no placer");
	r->capacity_milli = sim_capacity_milli(p);
	int64_t cap = r->capacity_milli;
	int *ord = NULL, nord = 0;
	enum sl_err e = sim_saturate_order(pods, n, cap, inflate_pct, seed, shuffle, &ord, &nord, d);
	if (e != SL_OK)
		return e;
	struct placement pl;
	placement_init(&pl);
	for (int i = 0; i < nord; i++) {
		const struct sim_pod *pod = &pods[ord[i]];
		r->pods++;
		int64_t milli = sim_pod_milli(pod);
		r->arrived_milli += milli;
		e = place_pod(p, pod, &pl, d);
		if (e == SL_OK) {
			r->alloc_milli += milli;
		} else if (e == SL_ENOSPACE) {
			r->failed++;
			r->failed_milli += milli;
			e = SL_OK;
		} else {
			break;
		}
		while (r->reached < SIM_CURVE_POINTS &&
		       r->arrived_milli * 100 >= (int64_t)r->reached * cap)
			r->alloc_at[r->reached++] = r->alloc_milli;
	}
	for (int k = r->reached; k < SIM_CURVE_POINTS; k++)
		r->alloc_at[k] = r->alloc_milli;
	placement_release(&pl);
	free(ord);
	return e;
}

/* ---- workload classes --------------------------------------------------- */

static bool same_class(const struct sim_pod *a, const struct sim_pod *b)
{
	if (a->gpus != b->gpus || a->gpu_milli != b->gpu_milli ||
	    a->cpu_milli != b->cpu_milli || a->mem_mib != b->mem_mib ||
	    a->nmodels != b->nmodels)
		return false;
	for (int i = 0; i < a->nmodels; i++)
		if (strcmp(a->models[i], b->models[i]))
			return false;
	return true;
}

static uint64_t class_hash(const struct sim_pod *a)
{
	uint64_t h = 1469598103934665603ULL;
	int64_t v[4] = {a->gpus, a->gpu_milli, a->cpu_milli, a->mem_mib};
	for (int i = 0; i < 4; i++)
		h = (h ^ (uint64_t)v[i]) * 1099511628211ULL;
	for (int i = 0; i < a->nmodels; i++)
		for (const char *s = a->models[i]; *s; s++)
			h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return h;
}

enum sl_err sim_workload(const struct fleet *f, const struct sim_pod *pods, int n,
			 struct place_class **out, int *nout, struct sl_diag *d)
{
	*out = NULL;
	*nout = 0;
	size_t nb = 1;
	while (nb < (size_t)n * 2 + 2)
		nb *= 2;
	int *slot = malloc(nb * sizeof(*slot));      /* hash slot -> class */
	int *rep = malloc(((size_t)n + 1) * sizeof(*rep)); /* class -> a pod */
	struct place_class *cls = calloc((size_t)n + 1, sizeof(*cls));
	if (!slot || !rep || !cls) {
		free(slot);
		free(rep);
		free(cls);
		return sl_diag_set(d, SL_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nb; i++)
		slot[i] = -1;
	int nc = 0;
	for (int i = 0; i < n; i++) {
		size_t h = (size_t)class_hash(&pods[i]) & (nb - 1);
		while (slot[h] >= 0 && !same_class(&pods[rep[slot[h]]], &pods[i]))
			h = (h + 1) & (nb - 1);
		if (slot[h] < 0) {
			slot[h] = nc;
			rep[nc] = i;
			struct place_class *c = &cls[nc++];
			c->gpus = pods[i].gpu_milli > 0 ? 1 : pods[i].gpus;
			c->gpu_milli = pods[i].gpu_milli;
			c->cpus = pods[i].cpu_milli;
			c->mem_mib = pods[i].mem_mib;
			for (int m = 0; m < pods[i].nmodels; m++)
				if (fleet_find_model(f, pods[i].models[m]))
					c->models[c->nmodels++] = pods[i].models[m];
			if (pods[i].nmodels > 0 && c->nmodels == 0)
				c->weight = -1; /* can never run here: dropped below */
		}
		if (cls[slot[h]].weight >= 0)
			cls[slot[h]].weight++;
	}
	int kept = 0;
	for (int i = 0; i < nc; i++)
		if (cls[i].weight > 0)
			cls[kept++] = cls[i];
	nc = kept;
	free(slot);
	free(rep);
	*out = cls;
	*nout = nc;
	return SL_OK;
}

/* ---- time replay -------------------------------------------------------- */

struct ev {
	int64_t t;
	int pod;
};

static void heap_push(struct ev *h, int *n, struct ev e)
{
	int i = (*n)++;
	while (i > 0) {
		int up = (i - 1) / 2;
		if (h[up].t < e.t || (h[up].t == e.t && h[up].pod < e.pod))
			break;
		h[i] = h[up];
		i = up;
	}
	h[i] = e;
}

static struct ev heap_pop(struct ev *h, int *n)
{
	struct ev top = h[0], last = h[--(*n)];
	int i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && (h[c + 1].t < h[c].t || (h[c + 1].t == h[c].t && h[c + 1].pod < h[c].pod)))
			c++;
		if (last.t < h[c].t || (last.t == h[c].t && last.pod < h[c].pod))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = last;
	return top;
}

struct start_key {
	int64_t start;
	int pod;
};

static int by_start(const void *a, const void *b)
{
	const struct start_key *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->pod < y->pod ? -1 : (x->pod > y->pod);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : (x > y);
}

struct replay {
	struct placer *p;
	const struct sim_pod *pods;
	struct placement *pl; /* per pod */
	int *queue, qh, qt;
	struct ev *heap;
	int nheap;
	int64_t *delay;
	int ndelay;
	int64_t alloc;
	int64_t last_start;
	bool *skip;
};

/* Starts queued pods from the head while they fit. */
static enum sl_err drain(struct replay *rp, int64_t t, struct sl_diag *d)
{
	while (rp->qh < rp->qt) {
		int i = rp->queue[rp->qh];
		enum sl_err e = place_pod(rp->p, &rp->pods[i], &rp->pl[i], d);
		if (e == SL_ENOSPACE)
			return SL_OK;
		if (e != SL_OK)
			return e;
		rp->qh++;
		rp->last_start = t;
		rp->alloc += sim_pod_milli(&rp->pods[i]);
		rp->delay[rp->ndelay++] = t - rp->pods[i].start;
		if (rp->pods[i].duration >= 0)
			heap_push(rp->heap, &rp->nheap, (struct ev){t + rp->pods[i].duration, i});
	}
	return SL_OK;
}

enum sl_err sim_replay(struct placer *p, const struct sim_pod *pods, int n, int nsamples,
		       sim_progress_fn progress, void *arg, struct sim_replay_result *r,
		       struct sl_diag *d)
{
	memset(r, 0, sizeof(*r));
	if (!p || !pods || n < 1)
		return sl_diag_set(d, SL_EINVAL, "no pods to replay");
	if (nsamples < 2 || nsamples > SIM_MAX_SAMPLES)
		return sl_diag_set(d, SL_EINVAL, "samples %d out of range 2..%d", nsamples,
				   SIM_MAX_SAMPLES);
	for (int i = 0; i < n; i++)
		if (pods[i].start < 0)
			return sl_diag_set(d, SL_EINVAL, "pod %s has no creation/submit time; a "
					   "time replay needs one for every pod", pods[i].name);
	struct replay rp = {.p = p, .pods = pods};
	int *ord = malloc((size_t)n * sizeof(*ord));
	rp.pl = calloc((size_t)n, sizeof(*rp.pl));
	rp.queue = malloc((size_t)n * sizeof(*rp.queue));
	rp.heap = malloc((size_t)n * sizeof(*rp.heap));
	rp.delay = malloc((size_t)n * sizeof(*rp.delay));
	rp.skip = calloc((size_t)n, sizeof(*rp.skip));
	r->samples = calloc((size_t)nsamples, sizeof(*r->samples));
	enum sl_err e = SL_OK;
	if (!ord || !rp.pl || !rp.queue || !rp.heap || !rp.delay || !rp.skip || !r->samples) {
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
		goto out;
	}
	struct start_key *keys = malloc((size_t)n * sizeof(*keys));
	if (!keys) {
		e = sl_diag_set(d, SL_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++)
		keys[i] = (struct start_key){pods[i].start, i};
	qsort(keys, (size_t)n, sizeof(*keys), by_start);
	for (int i = 0; i < n; i++)
		ord[i] = keys[i].pod;
	free(keys);
	r->pods = n;
	r->capacity_milli = sim_capacity_milli(p);
	/* Pods that do not fit the empty fleet would block the queue forever. */
	for (int i = 0; i < n && e == SL_OK; i++) {
		e = place_pod(p, &pods[i], &rp.pl[i], d);
		if (e == SL_ENOSPACE) {
			rp.skip[i] = true;
			r->unplaceable++;
			e = SL_OK;
		} else if (e == SL_OK && rp.pl[i].npicks) {
			e = placer_release(p, &rp.pl[i], d);
		}
	}
	if (e != SL_OK)
		goto out;
	/* The window ends when the last pod arrives or starts, whichever is later
	 * (afterwards pods only leave). It is unknown until it happens: simulate
	 * twice, the first time only to find t1 for evenly spaced samples. */
	int64_t t0 = pods[ord[0]].start, t1 = t0;
	for (int pass = 0; pass < 2 && e == SL_OK; pass++) {
		rp.qh = rp.qt = rp.nheap = rp.ndelay = 0;
		rp.alloc = 0;
		int ai = 0, si = 0;
		int64_t t = t0, done = 0, total = 2 * (int64_t)n, report = 0;
		double util_area = 0, strand_area = 0;
		while (ai < n || rp.nheap > 0) {
			int64_t na = ai < n ? pods[ord[ai]].start : INT64_MAX;
			int64_t nd = rp.nheap ? rp.heap[0].t : INT64_MAX;
			int64_t nt = nd <= na ? nd : na;
			int queued = rp.qt - rp.qh;
			double freeg = (double)(r->capacity_milli - rp.alloc) / 1000.0;
			if (pass == 1) {
				while (si < nsamples && r->samples[si].t < nt) {
					r->samples[si].alloc_milli = rp.alloc;
					r->samples[si].queue = queued;
					si++;
				}
				double dt = (double)((nt < t1 ? nt : t1) - t);
				if (dt < 0)
					dt = 0;
				util_area += (double)rp.alloc * dt;
				if (queued) {
					strand_area += freeg * dt;
					if (freeg > r->stranded_max)
						r->stranded_max = freeg;
				}
				if (queued > r->max_queue)
					r->max_queue = queued;
			}
			t = nt;
			if (nd <= na) {
				while (rp.nheap && rp.heap[0].t == t) {
					struct ev ev = heap_pop(rp.heap, &rp.nheap);
					if (rp.pl[ev.pod].npicks &&
					    (e = placer_release(p, &rp.pl[ev.pod], d)) != SL_OK)
						goto out;
					rp.alloc -= sim_pod_milli(&pods[ev.pod]);
					done++;
				}
			} else {
				while (ai < n && pods[ord[ai]].start == t) {
					int i = ord[ai++];
					done++;
					if (!rp.skip[i])
						rp.queue[rp.qt++] = i;
				}
			}
			if ((e = drain(&rp, t, d)) != SL_OK)
				goto out;
			if (progress && pass == 1 && done >= report) {
				progress(arg, done, total);
				report = done + total / 200 + 1;
			}
			if (pass == 1 && t >= t1 && ai >= n)
				break;
		}
		if (pass == 0) {
			t1 = rp.last_start > pods[ord[n - 1]].start ? rp.last_start
								    : pods[ord[n - 1]].start;
			if (t1 <= t0)
				t1 = t0 + 1;
			for (int s = 0; s < nsamples; s++)
				r->samples[s].t = t0 + (t1 - t0) * s / (nsamples - 1);
			/* Forever-running pods still hold their claims: give them back. */
			for (int q = 0; q < rp.qh; q++) {
				int i = rp.queue[q];
				if (pods[i].duration < 0 && rp.pl[i].npicks &&
				    (e = placer_release(p, &rp.pl[i], d)) != SL_OK)
					goto out;
			}
			continue;
		}
		for (; si < nsamples; si++) {
			r->samples[si].alloc_milli = rp.alloc;
			r->samples[si].queue = rp.qt - rp.qh;
		}
		r->nsamples = nsamples;
		r->t0 = t0;
		r->t1 = t1;
		double span = (double)(t1 - t0 > 0 ? t1 - t0 : 1);
		r->util_mean = r->capacity_milli ? util_area / span / (double)r->capacity_milli : 0;
		r->stranded_mean = strand_area / span;
		r->started = rp.ndelay;
		r->never_started = rp.qt - rp.qh;
		if (rp.ndelay) {
			double sum = 0;
			for (int i = 0; i < rp.ndelay; i++)
				sum += (double)rp.delay[i];
			r->delay_mean = sum / rp.ndelay;
			qsort(rp.delay, (size_t)rp.ndelay, sizeof(*rp.delay), cmp_i64);
			r->delay_median = rp.delay[(rp.ndelay - 1) / 2];
			r->delay_p99 = rp.delay[(int)(((int64_t)rp.ndelay * 99 + 99) / 100) - 1];
			r->delay_max = rp.delay[rp.ndelay - 1];
		}
		if (progress)
			progress(arg, total, total);
	}
out:
	if (rp.pl)
		for (int i = 0; i < n; i++)
			placement_release(&rp.pl[i]);
	free(ord);
	free(rp.pl);
	free(rp.queue);
	free(rp.heap);
	free(rp.delay);
	free(rp.skip);
	if (e != SL_OK)
		sim_replay_result_release(r);
	return e;
}

void sim_replay_result_release(struct sim_replay_result *r)
{
	free(r->samples);
	r->samples = NULL;
	r->nsamples = 0;
}
