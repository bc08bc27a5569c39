#!/usr/bin/env python3
"""bench/slurm_report.py - writes bench/results/slurm.md (to stdout) from one run
of bench/slurm.sh: Slurm's figures from the peer harness's summary.jsonl and
run.log, suanli's from bench_slurm_side's JSON lines. Called by bench/slurm.sh,
which passes everything in the environment (RES, WORK, SLURM_OK, ...)."""
import datetime
import json
import os
import platform
import re

env = os.environ
res, work = env["RES"], env["WORK"]
slurm_ok = env.get("SLURM_OK") == "1"


def jsonl(path):
    out = []
    try:
        for line in open(path):
            line = line.strip()
            if line:
                out.append(json.loads(line))
    except FileNotFoundError:
        pass
    return out


def pick(rows, kind, **match):
    for r in rows:
        if r.get("kind") == kind and all(r.get(k) == v for k, v in match.items()):
            return r
    return {}


S = jsonl(os.path.join(res, "summary.jsonl")) if slurm_ok else []
Q = jsonl(os.path.join(work, "suanli.jsonl"))
runlog = ""
if slurm_ok:
    try:
        runlog = open(os.path.join(res, "run.log"), errors="replace").read()
    except FileNotFoundError:
        pass

s_sub, s_thr = pick(S, "submission"), pick(S, "throughput")
s_pl = pick(S, "placement")
s_sw1, s_sw0 = pick(S, "switches", label="switches1"), pick(S, "switches", label="noswitches")
q_api, q_cli = pick(Q, "submission", via="api"), pick(Q, "submission", via="cli")
q_tls, q_cli_tls = pick(Q, "submission", via="api_tls"), pick(Q, "submission", via="cli_tls")
q_pair = pick(Q, "submission", via="api_lease_and_job")
q_thr, q_pl = pick(Q, "throughput"), pick(Q, "placement")
q_ag = pick(Q, "throughput_agents")
q_sw1, q_sw0 = pick(Q, "switches", label="one_leaf"), pick(Q, "switches", label="noswitches")


def log_num(pattern, group=1, cast=float):
    m = re.search(pattern, runlog)
    return cast(m.group(group)) if m else None


# Slurm figures only run.log has
s_fill_s = log_num(r"all (\d+) GPU slots busy at ([0-9.]+)s", 2)
s_slots = log_num(r"all (\d+) GPU slots busy at", 1, int)
s_k2 = re.search(r"k=2: (\d+) jobs;.*?all-pairs-bridged (\d+)/(\d+)", runlog)
s_k4 = re.search(r"k=4: (\d+) jobs;.*?all-pairs-bridged (\d+)/(\d+)", runlog)
s_drained = log_num(r"mixed workload drained in ([0-9.]+)s")


def avoid(d, k):
    return sum(v for key, v in d.items() if key.startswith(f"k{k}_avoidable"))


def f(x, fmt="{:.1f}"):
    if x is None or x == {}:
        return "n/a"
    if isinstance(x, str):
        return x
    return fmt.format(x)


def ratio(a, b):
    if a is None or b is None or not b:
        return ""
    return f"{a / b:.1f}x"


def ratio2(a, b):
    return "" if a is None or b is None or not b else f"{a / b:.2f}x"


def frac(n, d):
    return "n/a" if n is None or d is None else f"{n}/{d} ({100.0 * n / d:.0f}%)" if d else "0/0"


def leaves(d):
    ls = d.get("leaves_spanned", {})
    if not d:
        return "n/a"
    one = ls.get("1", ls.get(1, 0))
    return f"{one}/{d.get('multi_node', 0)} in one leaf" + (
        "" if one == d.get("multi_node") else
        " (" + ", ".join(f"{v} over {k}" for k, v in sorted(ls.items()) if str(k) != "1" and v) + ")")


def machine():
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    u = platform.uname()
    return (f"{u.system} {u.release} {u.machine}", cpu, os.cpu_count(), " ".join(load))


now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
osname, cpu, cores, load = machine()
nj = q_thr.get("jobs") or int(env.get("NJOBS", "2000"))
slots = q_thr.get("slots") or s_slots or 256
sleep = env.get("JOB_SLEEP", "5")
p = print

p("# Slurm side by side (bench/slurm.sh)\n")
p(f"- date: {now}")
p(f"- machine: {osname}; cpu: {cpu}, {cores} online cores; load average when written "
  f"(other work on the machine skews figures): {load}")
p(f"- command: `{env.get('CMDLINE', 'bench/slurm.sh')}` (suanli {env.get('REV', '?')}); "
  f"Slurm side: `{env.get('HARNESS')} all` with LEAVES=4 NPL=8 NJOBS={env.get('NJOBS')} "
  f"NMIX={env.get('NMIX')} NSW={env.get('NSW')} PAR={env.get('PAR')} JOB_SLEEP={sleep}, "
  f"default scheduler settings; suanli side: `bench_slurm_side bench/fleets/slurm-peer.yaml`")
p(f"- Slurm: {env.get('SLURM_VERSION')} (Debian), one slurmctld + 32 slurmd + munged on "
  f"loopback, `select/cons_tres`, `topology/tree`, `gres.conf` `Links=`; "
  f"{'ran in ' + env.get('T_SLURM', '?') + ' s' if slurm_ok else 'NOT RUN (not installed or harness missing): Slurm columns are n/a'}")
p(f"- suanli: one Release `suanlid serve --simulate` (SQLite store, durable commits) pinned "
  f"to core 0, the client on core 1; ran in {env.get('T_SUANLI', '?')} s")
p("- fleet (both): 32 nodes x 8 GPUs under 4 leaf switches of 8; n001-n016 PCIe H100 NVL "
  "with NVLink bridges in pairs 0-1, 2-3, 4-5, 6-7 (Slurm gres type `pairbridge`, suanli "
  "`pcie-h100nvl-8`), n017-n032 NVSwitch (`nvswitch`, `hgx-h100-8`)")
p(f"- a job: Slurm `sbatch --wrap 'sleep S'` (a real process under slurmstepd); suanli: a "
  f"lease of S seconds (`duration_s`) - in simulate mode nothing runs on the nodes, the "
  f"controller starts the lease and ends it S s later. A backlog: Slurm's partition DOWN "
  f"then UP; suanli: every node drained, then resumed (phases S, A, P); in phase T every "
  f"node reserved for another tenant while the jobs are submitted, all released at once "
  f"when the reservation ends. Start times: Slurm's controller log, "
  f"suanli's `started_at` (both millisecond resolution).\n")

p("## Summary\n")
p("| measure | Slurm | suanli | suanli / Slurm | goal |")
p("|---|---:|---:|---:|---|")
p(f"| submissions/s, one client in sequence (sbatch / API lease create) | "
  f"{f(s_sub.get('sequential_per_s'))} | {f(q_api.get('sequential_per_s'))} | "
  f"{ratio(q_api.get('sequential_per_s'), s_sub.get('sequential_per_s'))} | >= 10x |")
p(f"| submissions/s, {env.get('PAR')} clients in parallel (sbatch / API) | "
  f"{f(s_sub.get('parallel_per_s'))} | {f(q_api.get('parallel_per_s'))} | "
  f"{ratio(q_api.get('parallel_per_s'), s_sub.get('parallel_per_s'))} | >= 10x |")
p(f"| submissions/s over HTTPS (TLS, the client verifying the server), one client in sequence "
  f"(sbatch / API lease create) | "
  f"{f(s_sub.get('sequential_per_s'))} | {f(q_tls.get('sequential_per_s'))} | "
  f"{ratio(q_tls.get('sequential_per_s'), s_sub.get('sequential_per_s'))} | >= 10x |")
p(f"| submissions/s over HTTPS, {env.get('PAR')} clients in parallel (sbatch / API) | "
  f"{f(s_sub.get('parallel_per_s'))} | {f(q_tls.get('parallel_per_s'))} | "
  f"{ratio(q_tls.get('parallel_per_s'), s_sub.get('parallel_per_s'))} | >= 10x |")
p(f"| ... the data dir's fdatasync p50 / p99 (ms) at that moment: one client waits for one "
  f"per lease | | {f(q_api.get('fsync_p50_ms'), '{:.2f}')} / {f(q_api.get('fsync_p99_ms'), '{:.2f}')} | | |")
p(f"| submissions/s, one client in sequence (sbatch / `suanli lease create`, a process each) | "
  f"{f(s_sub.get('sequential_per_s'))} | {f(q_cli.get('sequential_per_s'))} | "
  f"{ratio(q_cli.get('sequential_per_s'), s_sub.get('sequential_per_s'))} | |")
p(f"| submissions/s, {env.get('PAR')} clients (sbatch / `suanli lease create`) | "
  f"{f(s_sub.get('parallel_per_s'))} | {f(q_cli.get('parallel_per_s'))} | "
  f"{ratio(q_cli.get('parallel_per_s'), s_sub.get('parallel_per_s'))} | |")
p(f"| submissions/s over HTTPS through the CLI, one in sequence / {env.get('PAR')} clients "
  f"(sbatch / `suanli lease create --ca`, a process and a TLS handshake each) | "
  f"{f(s_sub.get('sequential_per_s'))} / {f(s_sub.get('parallel_per_s'))} | "
  f"{f(q_cli_tls.get('sequential_per_s'))} / {f(q_cli_tls.get('parallel_per_s'))} | "
  f"{ratio(q_cli_tls.get('sequential_per_s'), s_sub.get('sequential_per_s'))} / "
  f"{ratio(q_cli_tls.get('parallel_per_s'), s_sub.get('parallel_per_s'))} | |")
p(f"| submissions/s with agents running the jobs: lease + job (2 API calls), one client / "
  f"{env.get('PAR')} clients ({q_pair.get('jobs', 'n/a')} on a free fleet) | "
  f"{f(s_sub.get('sequential_per_s'))} / {f(s_sub.get('parallel_per_s'))} | "
  f"{f(q_pair.get('sequential_per_s'))} / {f(q_pair.get('parallel_per_s'))} | "
  f"{ratio(q_pair.get('sequential_per_s'), s_sub.get('sequential_per_s'))} / "
  f"{ratio(q_pair.get('parallel_per_s'), s_sub.get('parallel_per_s'))} | |")
p(f"| {nj} one-GPU {sleep}-s jobs: first start after release (s) | "
  f"{f(s_thr.get('first_start_s'), '{:.3f}')} | {f(q_thr.get('first_start_s'), '{:.3f}')} | | |")
p(f"| all {slots} GPUs busy after (s) | {f(s_fill_s, '{:.2f}')} | "
  f"{f(q_thr.get('fill_s'), '{:.3f}')} | {ratio(s_fill_s, q_thr.get('fill_s'))} faster | |")
p(f"| fill rate: jobs started/s until every GPU is busy | {f(s_thr.get('fill_rate'))} | "
  f"{f(q_thr.get('fill_rate'))} | {ratio(q_thr.get('fill_rate'), s_thr.get('fill_rate'))} | >= 10x |")
p(f"| jobs started/s, overall (all {nj} / time of the last start) | "
  f"{f(s_thr.get('overall_starts_per_s'))} | {f(q_thr.get('overall_starts_per_s'))} | "
  f"{ratio(q_thr.get('overall_starts_per_s'), s_thr.get('overall_starts_per_s'))} | >= 10x (bound: see below) |")
p(f"| jobs started/s, steady (after the fill; GPU-bound ideal {slots}/{sleep} s = "
  f"{slots / float(sleep):.1f}) | {f(s_thr.get('steady_starts_per_s'))} | "
  f"{f(q_thr.get('steady_starts_per_s'))} | "
  f"{ratio(q_thr.get('steady_starts_per_s'), s_thr.get('steady_starts_per_s'))} | >= 10x (bound: see below) |")
p(f"| same {nj} jobs with agents running real `sleep {sleep}` (suanli: lease, then a job on it "
  f"once active, lease released when the job ends): all GPUs busy after (s) | "
  f"{f(s_fill_s, '{:.2f}')} | {f(q_ag.get('fill_s'), '{:.2f}')} | "
  f"{ratio(s_fill_s, q_ag.get('fill_s'))} faster | |")
p(f"| ... jobs started/s, overall / steady | {f(s_thr.get('overall_starts_per_s'))} / "
  f"{f(s_thr.get('steady_starts_per_s'))} | {f(q_ag.get('overall_starts_per_s'))} / "
  f"{f(q_ag.get('steady_starts_per_s'))} | "
  f"{ratio(q_ag.get('overall_starts_per_s'), s_thr.get('overall_starts_per_s'))} / "
  f"{ratio(q_ag.get('steady_starts_per_s'), s_thr.get('steady_starts_per_s'))} | |")
p(f"| ... jobs that did not succeed | | {q_ag.get('not_succeeded', 'n/a')} of {q_ag.get('jobs', 'n/a')} | | 0 |")
s2 = (int(s_k2.group(2)), int(s_k2.group(3))) if s_k2 else (None, None)
s4 = (int(s_k4.group(2)), int(s_k4.group(3))) if s_k4 else (None, None)
p(f"| mixed stream ({env.get('NMIX')} jobs, pair-bridged nodes): 2-GPU jobs on a whole NVLink pair | "
  f"{frac(*s2)} | {frac(q_pl.get('k2_whole_pair'), q_pl.get('k2_jobs'))} | | 100% |")
p(f"| 4-GPU jobs on two whole pairs | {frac(*s4)} | "
  f"{frac(q_pl.get('k4_two_whole_pairs'), q_pl.get('k4_jobs'))} | | 100% |")
s_k1b = s_pl.get("k1_broke_a_free_pair_although_a_lone_GPU_existed", 0) if s_pl else None
p(f"| 1-GPU jobs that broke a free pair while a lone GPU was free on that node | "
  f"{f(s_k1b, '{}') if s_pl else 'n/a'} of {f(s_pl.get('k1_lone_GPU_available'), '{}')} | "
  f"{q_pl.get('k1_broke_a_free_pair_although_a_lone_GPU_existed', 'n/a')} of "
  f"{q_pl.get('k1_lone_GPU_available', 'n/a')} | | 0 |")
p(f"| avoidable split: 2-/4-GPU job got fewer whole pairs than its node had free | "
  f"{avoid(s_pl, 2) if s_pl else 'n/a'} / {avoid(s_pl, 4) if s_pl else 'n/a'} | "
  f"{q_pl.get('k2_avoidable', 'n/a')} / {q_pl.get('k4_avoidable', 'n/a')} | | 0 |")
p(f"| mixed stream drained in (s) | {f(s_drained)} | {f(q_pl.get('drained_s'))} | | |")
p(f"| multi-node stream ({env.get('NSW')} jobs), one leaf required (Slurm `--switches=1@2:00`, "
  f"suanli `one_leaf`): jobs in one leaf | {leaves(s_sw1)} | {leaves(q_sw1)} | | all |")
p(f"| ... mean start delay (s) / makespan (s) | {f(s_sw1.get('mean_start_delay_s'))} / "
  f"{f(s_sw1.get('makespan_s'), '{:.0f}')} | {f(q_sw1.get('mean_start_delay_s'))} / "
  f"{f(q_sw1.get('makespan_s'), '{:.0f}')} | | |")
p(f"| same stream, no leaf requirement: jobs in one leaf | {leaves(s_sw0)} | {leaves(q_sw0)} | | "
  f">= Slurm's |")
p(f"| ... mean start delay (s) / makespan (s) | {f(s_sw0.get('mean_start_delay_s'))} / "
  f"{f(s_sw0.get('makespan_s'), '{:.0f}')} | {f(q_sw0.get('mean_start_delay_s'))} / "
  f"{f(q_sw0.get('makespan_s'), '{:.0f}')} | "
  f"{ratio2(q_sw0.get('mean_start_delay_s'), s_sw0.get('mean_start_delay_s'))} | "
  f"delay <= 0.5x Slurm's |")

p("""
## Reading it honestly

- **Submissions.** suanli acknowledges a lease only after its store commit is on disk
  (SQLite WAL, synchronous=FULL); slurmctld acknowledges a job from memory and saves
  its state later. One client in sequence therefore waits for one fdatasync per lease,
  and its rate is about 1 / the fdatasync time shown (on a quiet disk well under a
  millisecond; on this shared machine, while other work syncs, several). Parallel
  clients share commits (group commit): more clients, more leases per fsync
  (bench_api: 64 connections). sbatch is a process, a munge credential and an RPC per
  job. Through the CLI each submission is a process too, and the start-up of `suanli`
  (the dynamic linking of libcurl and its ~35 libraries) is most of its cost: the CLI is
  no faster than sbatch. Lease + job with the agents running costs two commits and wakes
  the node's agent (work fetch, fork, report) on the same two cores.
- **Over HTTPS.** The TLS rows go to a second daemon (same fleet, `--tls`, the
  certificate `suanlid init` made, TLS 1.3), started beside the plain one and
  measured alternately with it (plain in sequence, TLS in sequence, plain in
  parallel, TLS in parallel), so that both meet the same machine. The API client
  keeps its connection, as a real client does: one handshake, then one record per
  request each way plus the AES-GCM work on both sides. The CLI opens a connection,
  and so does a full handshake (X25519 and an ECDSA P-256 signature on the daemon),
  per process.
- **Starts.** With the partition released at once, suanli fills all GPU slots in tens
  of milliseconds: one pass of the scheduler after the nodes return. Slurm's main and
  backfill schedulers take seconds. After the fill, starts are bounded by the GPUs, not
  the scheduler: 256 GPUs and 5-second jobs allow at most 51.2 starts/s, and 2,000 jobs
  need at least 8 rounds of 5 s (about 35 s), so overall and steady starts/s cannot be
  10x Slurm's on this stream by construction; the fill rate and the time to a busy fleet
  are where the scheduler's speed shows. suanli's steady rate sits at the GPU bound.
- **With agents.** suanli runs no batch queue of its own: a job runs on an active
  lease, so a backlog is a queue of leases, and the client (bench_slurm_side with
  PAR connections, 4 by default) puts a `sleep` job on each lease as it starts and releases the lease
  when its job has ended - what sbatch's one call does. Those starts include the
  client's poll (every 50 ms), two API calls and the agent's long poll, fork and report,
  on the same two cores as 32 agents and 256 real `sleep` processes. They are the
  honest end-to-end figure; the simulate-mode rows above are the scheduler's own.
- **GPU choice.** Slurm picks the lowest free GPU on the job's socket and adds linked
  GPUs relative to it; it never looks for a whole free pair. suanli's placer scores
  every free set on every node (bottleneck bandwidth first, then what the choice leaves
  behind), so it never split a pair a job could have had on its node (avoidable splits
  0) and never broke a free pair for a one-GPU job while a lone GPU was free. The 2- and
  4-GPU jobs that still got split GPUs were started when no pair-bridged node had a whole
  free pair left (`k2_split_while_a_pair_was_free_elsewhere` below counts the
  contrary); the request did not ask for NVLink, so it starts on PCIe-linked GPUs rather
  than waiting. A job that needs the bridge says so with `min_bw_gbps` and waits for a
  pair.
- **Leaves.** `one_leaf` is strict (no time limit, unlike Slurm's `@2:00`): a gang that
  no leaf can hold waits. Without it suanli starts a gang at once on the fewest leaves
  that are free now, which can be two while a single leaf would free up seconds later;
  compare the two rows' start delays for what the requirement costs on this stream.
  The placer keeps whole nodes under one leaf for the gangs that need them (the leaf
  term, docs/placement.md). The backlog is released at once, as Slurm's partition UP:
  resuming the drained nodes one by one (what this bench did before 2026-12-05,
  `T_RELEASE=resume`) ran a pass per node, and the first gangs started on the few nodes
  back so far; that, not the placer, put 9-16 of 33 gangs over two leaves.
  `bench_leaf_sim` replays this stream on the core alone, both ways. The mean start
  delay is bound by the stream itself: 27 s of work on 256 GPUs, started in submission
  order; even starting every job that fits, ignoring the head, gives 6.85 s on the core
  replay, so half of Slurm's ~11-15 s is out of reach without reordering the queue.
  Start delays include the time the backlog needs to drain through 256 GPUs (Slurm's
  jobs also run a few hundred milliseconds longer than their sleep); both systems see
  the same stream.
- **What is simulated.** suanli's nodes run nothing here (`--simulate`): a lease is the
  job. The controller, its store (every start and end committed) and its scheduler are
  the real ones; Slurm's side runs real slurmd and slurmstepd processes, which costs it
  CPU on the same two cores.
""")

p("## Raw figures\n")
p("Slurm (the harness's summary.jsonl of this run):\n")
p("```")
for r in S:
    p(json.dumps(r))
p("```\n")
p("suanli (bench_slurm_side):\n")
p("```")
for r in Q:
    p(json.dumps(r))
p("```")
