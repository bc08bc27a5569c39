/* lease_net.c - per-lease fabric addresses (lease_net.h). */
#include "lease_net.h"

#include <stdio.h>
#include <string.h>

bool lease_ip_parse(const char *s, uint32_t *addr)
{
	uint32_t a = 0;
	int parts = 0;
	const char *p = s;
	if (!s)
		return false;
	while (parts < 4) {
		if (*p < '0' || *p > '9')
			return false;
		unsigned v = 0;
		int digits = 0;
		while (*p >= '0' && *p <= '9' && digits < 4) {
			v = v * 10 + (unsigned)(*p++ - '0');
			digits++;
		}
		if (digits > 3 || v > 255 || (digits > 1 && p[-digits] == '0'))
			return false;
		a = a << 8 | v;
		parts++;
		if (parts < 4 && *p++ != '.')
			return false;
	}
	if (*p)
		return false;
	*addr = a;
	return true;
}

void lease_ip_format(uint32_t a, char *buf, size_t n)
{
	snprintf(buf, n, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

enum sl_err lease_pool_parse(const char *s, struct lease_pool *out, struct sl_diag *d)
{
	char ip[LEASE_NET_ADDR_MAX];
	const char *slash = s ? strchr(s, '/') : NULL;
	size_t len = slash ? (size_t)(slash - s) : 0;
	int prefix = -1, used = 0;
	uint32_t a;
	if (!slash || len == 0 || len >= sizeof(ip))
		return sl_diag_set(d, SL_EINVAL, "lease address pool '%.40s' is not A.B.C.D/N",
				   s ? s : "");
	memcpy(ip, s, len);
	ip[len] = '\0';
	if (!lease_ip_parse(ip, &a) || sscanf(slash + 1, "%2d%n", &prefix, &used) != 1 ||
	    slash[1 + used] != '\0' || slash[1] < '0' || slash[1] > '9' || prefix < 1 || prefix > 32)
		return sl_diag_set(d, SL_EINVAL, "lease address pool '%.40s' is not A.B.C.D/N "
						 "(N 1..32)", s);
	uint32_t mask = prefix == 32 ? 0xffffffffu : ~(0xffffffffu >> prefix);
	if (a & ~mask)
		return sl_diag_set(d, SL_EINVAL, "lease address pool '%.40s' has host bits set "
						 "(the pool's first address, e.g. %u.%u.%u.%u/%d)",
				   s, (a & mask) >> 24, ((a & mask) >> 16) & 255,
				   ((a & mask) >> 8) & 255, (a & mask) & 255, prefix);
	out->base = a;
	out->prefix = prefix;
	return SL_OK;
}

uint32_t lease_pool_block(const struct lease_pool *p, int ngpus)
{
	if (ngpus < 1 || p->prefix < 1 || p->prefix > 32)
		return 0;
	uint64_t size = 1ull << (32 - p->prefix), per = size / (uint64_t)ngpus, b = 1;
	if (per == 0)
		return 0;
	while (b * 2 <= per)
		b *= 2;
	return (uint32_t)b;
}

bool lease_net_addr(const struct lease_pool *p, int ngpus, int gpu, uint64_t seq, uint32_t *addr,
		    char *block, size_t n)
{
	uint32_t b = lease_pool_block(p, ngpus);
	if (b == 0 || gpu < 0 || gpu >= ngpus)
		return false;
	uint32_t base = p->base + (uint32_t)gpu * b;
	*addr = base + (uint32_t)(seq % b);
	if (block) {
		char ip[LEASE_NET_ADDR_MAX];
		int bits = 0;
		while ((1u << bits) < b)
			bits++;
		lease_ip_format(base, ip, sizeof(ip));
		snprintf(block, n, "%s/%d", ip, 32 - bits);
	}
	return true;
}
