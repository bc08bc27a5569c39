/* bench_lib.h - what the controller benchmarks (bench/api.c, bench/crash.c)
 * share: a fixed-seed fleet file, starting and killing a real suanlid, a
 * small HTTP/1.1 client over raw keep-alive sockets, percentiles and the
 * machine's description for the results files.
 *
 * Why a header of static functions: CMake makes one executable per .c
 * file in bench/, so a shared .c would become a program of its own. Why raw
 * sockets rather than libcurl: the client must cost far less than the
 * daemon it measures, and a response parser for Content-Length answers from
 * one known server is a few lines. Benchmarks exit on setup failures (they
 * are programs, not library code); the figures are never judged here.
 *
 * HTTPS: a bl_conn with .https set speaks TLS with GnuTLS (TLS 1.2 or 1.3,
 * the server verified against the CA given to bl_tls_use and 127.0.0.1), as
 * a real client does: one handshake per connection, kept alive, one record
 * per request. */
#ifndef SL_BENCH_LIB_H
#define SL_BENCH_LIB_H

/* Built with -D_GNU_SOURCE (CMakeLists.txt: memmem, sched_setaffinity). */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>

#include "buf.h"

/* A response head plus body never exceeds this in the benchmarks except
 * lease lists, which grow the buffer. */
#define BL_BUF_INIT 65536u
#define BL_CONN_MAX ((size_t)1 << 30) /* bytes buffered on one connection */
#define BL_MAX_SAMPLES ((size_t)1 << 28) /* entries of one array: samples, records */
#define BL_PATH_MAX 4096

static void bl_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void bl_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static inline double bl_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline uint64_t bl_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static inline int bl_below(uint64_t *s, int n)
{
	return (int)(bl_rng(s) % (uint64_t)n);
}

/* ---- samples and percentiles ---- */

struct bl_samples {
	double *v;
	size_t n, cap;
};

static inline void bl_add(struct bl_samples *s, double x)
{
	if (sl_grow(&s->v, &s->cap, s->n + 1, BL_MAX_SAMPLES))
		bl_die("out of memory");
	s->v[s->n++] = x;
}

static int bl_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Percentile p (0..100) by nearest rank; sorts the samples. 0 when empty. */
static inline double bl_pct(struct bl_samples *s, double p)
{
	if (!s->n)
		return 0;
	qsort(s->v, s->n, sizeof(*s->v), bl_cmp_double);
	size_t k = (size_t)(p / 100.0 * (double)s->n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > s->n)
		k = s->n;
	return s->v[k - 1];
}

/* ---- the fleet file ---- */

static const struct {
	const char *type;
	int price;
} bl_types[] = {
	{"hgx-h100-8", 1800}, {"hgx-h200-8", 2400}, {"hgx-a100-8", 1000},
	{"hgx-h800-8", 1500}, {"hgx-b200-8", 3500}, {"hgx-a800-8", 900},
};
#define BL_NTYPES ((int)(sizeof(bl_types) / sizeof(bl_types[0])))
#define BL_LEAF 32

/* Writes a fleet of `nodes` 8-GPU nodes of mixed non-shareable built-in
 * types (one type per leaf of 32, drawn with a fixed seed) in two sites of
 * one region, so that leases need not name a region. */
static inline void bl_write_fleet(const char *path, int nodes)
{
	FILE *f = fopen(path, "w");
	if (!f)
		bl_die("cannot write %s: %s", path, strerror(errno));
	uint64_t seed = 0x5eed5eedULL;
	int leaves = (nodes + BL_LEAF - 1) / BL_LEAF, half = (leaves + 1) / 2;
	fprintf(f, "sites:\n");
	for (int s = 0; s < 2; s++) {
		fprintf(f, "  - name: bench-%c\n    region: cn-east\n    fabrics:\n"
			   "      - name: bench-%c-ib\n        kind: infiniband\n        gbps: 400\n"
			   "        leaves:\n", 'a' + s, 'a' + s);
		for (int l = s ? half : 0; l < (s ? leaves : half); l++) {
			int n = nodes - l * BL_LEAF < BL_LEAF ? nodes - l * BL_LEAF : BL_LEAF;
			int t = bl_below(&seed, BL_NTYPES);
			fprintf(f, "          - name: leaf-%03d\n            nodes:\n"
				   "              - {range: \"n%03d-[01-%02d]\", type: %s, price_hint: %d}\n",
				l + 1, l + 1, n, bl_types[t].type, bl_types[t].price);
		}
	}
	if (fclose(f))
		bl_die("cannot write %s", path);
}

/* ---- the daemon ---- */

/* A free loopback port (bound, read back, closed), so that restarts reuse
 * one address. */
static inline int bl_free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &al))
		bl_die("no free port: %s", strerror(errno));
	close(fd);
	return ntohs(a.sin_port);
}

/* True when the machine has a second core for the client. */
static inline bool bl_two_cores(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN) >= 2;
}

/* Pins the calling process to one core (cpu < 64). */
static inline void bl_pin(int cpu)
{
	if (!bl_two_cores())
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET((size_t)cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
}

/* Runs argv (NULL-terminated) pinned to core 0 with stdout and stderr
 * appended to log; returns its pid. */
static inline pid_t bl_spawn(char *const argv[], const char *log)
{
	pid_t pid = fork();
	if (pid < 0)
		bl_die("fork: %s", strerror(errno));
	if (pid == 0) {
		bl_pin(0);
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* `suanlid init --data dir`; the admin token into tok (size n). */
static inline void bl_init_data(const char *suanlid, const char *dir, const char *log,
				char *tok, size_t n)
{
	char *argv[] = {(char *)suanlid, "init", "--data", (char *)dir, NULL};
	int st;
	pid_t pid = bl_spawn(argv, log);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		bl_die("suanlid init failed (see %s)", log);
	char p[BL_PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/admin.token", dir);
	FILE *f = fopen(p, "r");
	if (!f || !fgets(tok, (int)n, f))
		bl_die("cannot read %s", p);
	fclose(f);
	tok[strcspn(tok, "\r\n")] = 0;
}

/* ---- HTTP over raw sockets ---- */

struct bl_conn {
	int fd;
	char *buf; /* bytes read and not yet consumed */
	size_t len, cap;
	bool https; /* set by the caller: connect with TLS */
	gnutls_session_t tls; /* the session while connected over TLS */
};

/* Process-wide: the CA that HTTPS connections verify the server with. */
static gnutls_certificate_credentials_t bl_tls_cred;

/* HTTPS connections opened from now on trust the CA in ca_file (PEM). */
static inline void bl_tls_use(const char *ca_file)
{
	if (bl_tls_cred)
		gnutls_certificate_free_credentials(bl_tls_cred);
	if (gnutls_certificate_allocate_credentials(&bl_tls_cred) < 0 ||
	    gnutls_certificate_set_x509_trust_file(bl_tls_cred, ca_file, GNUTLS_X509_FMT_PEM) <= 0)
		bl_die("cannot load the CA certificate %s", ca_file);
}

/* The TLS handshake on c->fd (blocking), verifying the server's certificate
 * for 127.0.0.1; dies on failure (a bench against a server it cannot trust
 * measures nothing). */
static inline void bl_tls_start(struct bl_conn *c)
{
	int rc;
	if (!bl_tls_cred)
		bl_die("an HTTPS connection without a CA (bl_tls_use)");
	if ((rc = gnutls_init(&c->tls, GNUTLS_CLIENT | GNUTLS_NO_SIGNAL)) < 0 ||
	    (rc = gnutls_set_default_priority(c->tls)) < 0 ||
	    (rc = gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, bl_tls_cred)) < 0)
		bl_die("TLS session: %s", gnutls_strerror(rc));
	gnutls_session_set_verify_cert(c->tls, "127.0.0.1", 0);
	gnutls_transport_set_int(c->tls, c->fd);
	gnutls_handshake_set_timeout(c->tls, GNUTLS_DEFAULT_HANDSHAKE_TIMEOUT);
	do
		rc = gnutls_handshake(c->tls);
	while (rc < 0 && !gnutls_error_is_fatal(rc));
	if (rc < 0)
		bl_die("TLS handshake with 127.0.0.1: %s", gnutls_strerror(rc));
}

/* Connects to 127.0.0.1:port; -1 when refused (the daemon is not up yet). */
static inline int bl_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (fd < 0)
		bl_die("socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static inline void bl_conn_reset(struct bl_conn *c)
{
	if (c->tls)
		gnutls_deinit(c->tls);
	c->tls = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->len = 0;
}

/* Connects c to 127.0.0.1:port (with TLS when c->https); false when refused. */
static inline bool bl_conn_open(struct bl_conn *c, int port)
{
	c->tls = NULL;
	c->len = 0;
	if ((c->fd = bl_connect(port)) < 0)
		return false;
	if (c->https)
		bl_tls_start(c);
	return true;
}

/* Sends all n bytes of p (one TLS record for a request); false when the
 * connection broke. */
static inline bool bl_send(struct bl_conn *c, const char *p, size_t n)
{
	size_t off = 0;
	while (off < n) {
		ssize_t w = c->tls ? gnutls_record_send(c->tls, p + off, n - off)
				   : send(c->fd, p + off, n - off, MSG_NOSIGNAL);
		if (c->tls && w < 0 && !gnutls_error_is_fatal((int)w))
			continue;
		if (w <= 0)
			return false;
		off += (size_t)w;
	}
	return true;
}

/* Formats a request into out (size n); returns its length. body may be NULL,
 * token and key (Idempotency-Key) may be NULL (no such header). */
static inline size_t bl_format(char *out, size_t n, const char *method, const char *path,
			       const char *token, const char *body, const char *key)
{
	size_t bl = body ? strlen(body) : 0;
	int k = snprintf(out, n,
			 "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%s"
			 "%s%s%sContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
			 method, path, token ? "Authorization: Bearer " : "", token ? token : "",
			 token ? "\r\n" : "", key ? "Idempotency-Key: " : "", key ? key : "",
			 key ? "\r\n" : "", bl, body ? body : "");
	if (k < 0 || (size_t)k >= n)
		bl_die("request too long");
	return (size_t)k;
}

/* Parses one response at the start of buf[0..len): returns the bytes it
 * takes (head + body) with *status and the body's offset and length, 0 when
 * incomplete, -1 when malformed or not sized by Content-Length. */
static inline long bl_parse(const char *buf, size_t len, int *status, size_t *boff, size_t *blen)
{
	const char *end = memmem(buf, len, "\r\n\r\n", 4);
	if (!end)
		return 0;
	size_t head = (size_t)(end - buf) + 4;
	if (len < 12 || memcmp(buf, "HTTP/1.", 7))
		return -1;
	*status = atoi(buf + 9);
	long cl = -1;
	for (const char *p = buf; p && p < end;) {
		p = memchr(p, '\n', (size_t)(end - p));
		if (!p)
			break;
		p++;
		if (!strncasecmp(p, "content-length:", 15))
			cl = atol(p + 15);
	}
	if (cl < 0)
		return -1;
	if (len < head + (size_t)cl)
		return 0;
	*boff = head;
	*blen = (size_t)cl;
	return (long)(head + (size_t)cl);
}

/* Reads what the socket has into c->buf; returns bytes read, 0 on EOF, -1
 * on error (EAGAIN included for non-blocking sockets). */
static inline ssize_t bl_fill(struct bl_conn *c)
{
	if (c->cap - c->len < 4096) {
		size_t alloc = c->cap ? c->cap + 1 : 0; /* one byte past cap for a NUL */
		size_t need = c->len + 4096 + 1;
		if (sl_grow(&c->buf, &alloc, need > BL_BUF_INIT + 1 ? need : BL_BUF_INIT + 1,
			    BL_CONN_MAX + 1))
			bl_die("out of memory");
		c->cap = alloc - 1;
	}
	if (!c->tls)
		return read(c->fd, c->buf + c->len, c->cap - c->len);
	/* A record at a time; and what GnuTLS already holds (no readiness
	 * event will come for it). */
	size_t got = 0;
	do {
		ssize_t r = gnutls_record_recv(c->tls, c->buf + c->len + got, c->cap - c->len - got);
		if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
			continue;
		if (r <= 0)
			return got ? (ssize_t)got : r < 0 ? -1 : 0;
		got += (size_t)r;
	} while (gnutls_record_check_pending(c->tls) > 0 && got < c->cap - c->len);
	return (ssize_t)got;
}

/* One blocking exchange on a keep-alive connection (connecting first if
 * needed). Returns the status, with the body (NUL-terminated, malloc'd) in
 * *body if body is not NULL; -1 when the connection broke or the daemon is
 * gone (the connection is then closed). */
static inline int bl_call(struct bl_conn *c, int port, const char *method, const char *path,
			  const char *token, const char *json, const char *key, char **body)
{
	static char req[16384];
	if (c->fd < 0 && !bl_conn_open(c, port))
		return -1;
	size_t n = bl_format(req, sizeof(req), method, path, token, json, key);
	if (!bl_send(c, req, n)) {
		bl_conn_reset(c);
		return -1;
	}
	for (;;) {
		int st;
		size_t bo, bn;
		long used = c->len ? bl_parse(c->buf, c->len, &st, &bo, &bn) : 0;
		if (used < 0) {
			bl_conn_reset(c);
			return -1;
		}
		if (used > 0) {
			if (body) {
				*body = malloc(bn + 1);
				if (!*body)
					bl_die("out of memory");
				memcpy(*body, c->buf + bo, bn);
				(*body)[bn] = 0;
			}
			memmove(c->buf, c->buf + used, c->len - (size_t)used);
			c->len -= (size_t)used;
			return st;
		}
		ssize_t r = bl_fill(c);
		if (r <= 0) {
			bl_conn_reset(c);
			return -1;
		}
		c->len += (size_t)r;
	}
}

/* Waits until GET /healthz answers 200 (or the process dies, or limit_ms
 * passes); returns true when it answered. */
static inline bool bl_wait_healthy(int port, pid_t pid, double limit_ms)
{
	double t0 = bl_now_ms();
	struct bl_conn c = {.fd = -1};
	bool ok = false;
	while (bl_now_ms() - t0 < limit_ms) {
		if (bl_call(&c, port, "GET", "/healthz", NULL, NULL, NULL, NULL) == 200) {
			ok = true;
			break;
		}
		if (waitpid(pid, NULL, WNOHANG) == pid)
			break;
		struct timespec ts = {0, 500000};
		nanosleep(&ts, NULL);
	}
	bl_conn_reset(&c);
	free(c.buf);
	return ok;
}

/* Waits until the port takes a connection (for an HTTPS daemon, which
 * bl_wait_healthy's plain request cannot reach); false when the process
 * died or limit_ms passed. */
static inline bool bl_wait_tcp(int port, pid_t pid, double limit_ms)
{
	double t0 = bl_now_ms();
	while (bl_now_ms() - t0 < limit_ms) {
		int fd = bl_connect(port);
		if (fd >= 0) {
			close(fd);
			return true;
		}
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return false;
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
	return false;
}

/* The value of "key":"..." first found in json, into out (size n); false if
 * absent. Enough for ids in answers of a known shape. */
static inline bool bl_json_str(const char *json, const char *key, char *out, size_t n)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	const char *p = json ? strstr(json, pat) : NULL;
	if (!p)
		return false;
	p += strlen(pat);
	const char *q = strchr(p, '"');
	if (!q || (size_t)(q - p) >= n)
		return false;
	memcpy(out, p, (size_t)(q - p));
	out[q - p] = 0;
	return true;
}

/* ---- the results file ---- */

/* Writes the machine's description (date, uname, CPU model, cores, the
 * exact command) as a list. */
static inline void bl_machine(FILE *o, int argc, char **argv)
{
	struct utsname u;
	char date[64], cpu[256] = "unknown", line[512];
	time_t t = time(NULL);
	struct tm tm;
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	uname(&u);
	FILE *f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');
		if (!strncmp(line, "model name", 10) && c) {
			snprintf(cpu, sizeof(cpu), "%s", c + 2);
			cpu[strcspn(cpu, "\n")] = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	fprintf(o, "- date: %s\n- machine: %s %s %s %s\n- cpu: %s, %ld online cores\n",
		date, u.sysname, u.release, u.version, u.machine, cpu, sysconf(_SC_NPROCESSORS_ONLN));
	double load[3] = {0, 0, 0};
	f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
			load[0] = load[1] = load[2] = 0;
		fclose(f);
	}
	fprintf(o, "- load average when written (other work on the machine skews figures): "
		   "%.2f %.2f %.2f\n", load[0], load[1], load[2]);
	fprintf(o, "- command:");
	for (int i = 0; i < argc; i++)
		fprintf(o, " %s", argv[i]);
	fprintf(o, "\n- build: gcc %s\n", __VERSION__);
}

/* Temp directory for one run (removed by the caller with bl_rmrf). */
static inline void bl_tmpdir(char *out, size_t n, const char *tag)
{
	const char *base = getenv("TMPDIR");
	snprintf(out, n, "%s/suanli-%s-XXXXXX", base && *base ? base : "/tmp", tag);
	if (!mkdtemp(out))
		bl_die("mkdtemp: %s", strerror(errno));
}

/* Everything a benchmark needs before it starts suanlid: the binary
 * ($SUANLID, else suanlid beside this program), a temp dir with a generated
 * fleet of nodes nodes, an initialised data dir (admin token read back), its
 * log path, and a free loopback port. Dies with a message when any is missing. */
struct bl_daemon {
	char suanlid[BL_PATH_MAX], dir[BL_PATH_MAX], data[BL_PATH_MAX + 8];
	char fleet[BL_PATH_MAX + 16], log[BL_PATH_MAX + 16], admin[256], portarg[32];
	int port;
};

static inline void bl_daemon_prepare(struct bl_daemon *d, const char *tag, int nodes)
{
	if (getenv("SUANLID"))
		snprintf(d->suanlid, sizeof(d->suanlid), "%s", getenv("SUANLID"));
	else {
		ssize_t n = readlink("/proc/self/exe", d->suanlid, sizeof(d->suanlid) - 16);
		if (n <= 0)
			bl_die("cannot find myself; set SUANLID");
		d->suanlid[n] = 0;
		snprintf(strrchr(d->suanlid, '/') + 1, 16, "suanlid");
	}
	if (access(d->suanlid, X_OK))
		bl_die("no suanlid at %s (build it, or set SUANLID)", d->suanlid);
	bl_tmpdir(d->dir, sizeof(d->dir), tag);
	snprintf(d->data, sizeof(d->data), "%s/data", d->dir);
	snprintf(d->fleet, sizeof(d->fleet), "%s/fleet.yaml", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/suanlid.log", d->dir);
	bl_write_fleet(d->fleet, nodes);
	bl_init_data(d->suanlid, d->data, d->log, d->admin, sizeof(d->admin));
	d->port = bl_free_port();
	snprintf(d->portarg, sizeof(d->portarg), "127.0.0.1:%d", d->port);
}

/* utime + stime of pid in ms, from /proc/PID/stat; 0 when it cannot be read. */
static inline double bl_proc_cpu_ms(pid_t pid)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *q = strrchr(buf, ')');
	unsigned long ut = 0, st = 0;
	if (!q || sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static inline void bl_rmrf(const char *dir)
{
	char *argv[] = {"/bin/rm", "-rf", (char *)dir, NULL};
	pid_t pid = fork();
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

#endif
