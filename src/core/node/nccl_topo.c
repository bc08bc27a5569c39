/* nccl_topo.c - the NCCL topology XML (NCCL_TOPO_FILE) for one job's GPUs and
 * NICs on one node.
 *
 * The shape is the one NCCL itself dumps (NCCL_TOPO_DUMP_FILE):
 *
 *   <system version="1">
 *     <cpu numaid="0" arch="x86_64">                     one per NUMA node used
 *       <pci busid=".." class="0x060400" ..>             a PCIe switch per NIC rail
 *         <pci busid=".." class="0x030200" ..>           a GPU
 *           <gpu dev="0" sm="90" rank="0" gdr="1">
 *             <nvlink target="fffffff:ff:ff.0" count="18" tclass="0x068000"/>
 *           </gpu>
 *         </pci>
 *         <pci busid=".." class="0x020700" ..><nic><net name="mlx5_0" .../></nic></pci>
 *       </pci>
 *     </cpu>
 *   </system>
 *
 * Choices, and why:
 *  - NVSwitch links point at the bridge-class target "fffffff:ff:ff.0" with
 *    tclass 0x068000, as NCCL's own dumps show on systems whose switches are
 *    not visible as PCI devices; NCCL joins every GPU with such links into one
 *    NVSwitch node. Direct NVLinks point at the peer GPU (tclass 0x030200), and
 *    only at peers the job was given.
 *  - "affinity" and the CPU "vendor" are left out on purpose: NCCL fills a
 *    missing affinity from /sys/devices/system/node/nodeN/cpumap and the vendor
 *    from cpuid on the host, which is more exact than anything we could guess.
 *  - dev is the GPU's NVML index (what NCCL writes there itself); rank numbers
 *    the chosen GPUs in index order (NCCL overwrites it with the real rank).
 *  - A NIC gets only name, dev and, when known, speed: NCCL fills every
 *    attribute left out from its network plugin (port, guid, maxconn, latency,
 *    and gdr from whether GPUDirect RDMA really works on the host), which is
 *    better than a guess that would, say, claim GPUDirect without nv_peermem.
 *  - Bus ids come from the discovery (NVML's "00000000:18:00.0" shortened to
 *    NCCL's "0000:18:00.0"); when unknown (simulated or parsed nodes) they are
 *    made up deterministically in distinct ranges for GPUs, NICs and switches.
 *  - Each NIC sits under a PCIe switch with the chosen GPUs of its rail that
 *    share its NUMA node, so NCCL sees the rail as PIX; GPUs of no chosen rail
 *    hang off the CPU directly.
 */
#include "nccl_topo.h"
#include "buf.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>


/* Compute capability x 10 (NCCL's "sm"); 0 when not known (not a CUDA part,
 * or a model the catalog lacks). */
static int model_sm(const struct gpu_model *m)
{
	static const struct {
		const char *name;
		int sm;
	} sms[] = {
		{"h100-sxm", 90}, {"h200-sxm", 90}, {"h800-sxm", 90}, {"h100-nvl", 90},
		{"a100-sxm", 80}, {"a800-sxm", 80}, {"l40s", 89},     {"b200", 100},
		{"gb200", 100},   {"b300", 103},    {"gb300", 103},
	};
	for (size_t i = 0; m && i < sizeof(sms) / sizeof(sms[0]); i++)
		if (strcmp(sms[i].name, m->name) == 0)
			return sms[i].sm;
	return 0;
}

static const char *model_link_speed(const struct gpu_model *m)
{
	switch (m ? m->pcie_gen : 4) {
	case 3:
		return "8.0 GT/s PCIe";
	case 5:
		return "32.0 GT/s PCIe";
	case 6:
		return "64.0 GT/s PCIe";
	default:
		return "16.0 GT/s PCIe";
	}
}

/* NCCL's "dddd:bb:dd.f" in lower case from the discovery, or a made-up one. */
static void gpu_busid(const struct discovery *d, int g, char *s, size_t n)
{
	const char *b = d->gpus[g].bus_id;
	size_t len = strlen(b);

	if (len >= 12) {
		snprintf(s, n, "%s", b + len - 12);
		for (char *p = s; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		return;
	}
	snprintf(s, n, "0000:%02x:00.0", 0x11 + 8 * g);
}

static int nic_bus(int i)
{
	return 0x92 + 4 * i;
}

static int switch_bus(int i)
{
	return 0x91 + 4 * i;
}

static int gpu_links(const struct discovery *d, int g)
{
	const struct gpu_model *m = d->type.gpu;
	if (d->gpus[g].nvlinks_up > 0)
		return d->gpus[g].nvlinks_up;
	return m && m->link_gbps > 0 ? m->ic_gbps / m->link_gbps : 1;
}

static void put_gpu(struct sl_buf *o, const struct discovery *d, gpumask_t gpus, int g,
		    const char *indent)
{
	const struct node_type *t = &d->type;
	char bus[32];
	int rank = 0;
	bool nvs = false;

	for (int i = 0; i < g; i++)
		rank += (int)(gpus >> i & 1u);
	gpu_busid(d, g, bus, sizeof(bus));
	sl_buf_addf(o, "%s<pci busid=\"%s\" class=\"0x030200\" vendor=\"0x10de\" link_speed=\"%s\" "
	       "link_width=\"16\">\n", indent, bus, model_link_speed(t->gpu));
	sl_buf_addf(o, "%s  <gpu dev=\"%d\"", indent, g);
	if (model_sm(t->gpu) > 0) /* else NCCL reads the compute capability itself */
		sl_buf_addf(o, " sm=\"%d\"", model_sm(t->gpu));
	sl_buf_addf(o, " rank=\"%d\" gdr=\"1\">\n", rank);
	for (int b = 0; b < t->ngpus; b++) {
		const struct topo_link *l = &t->link[g][b];
		if (b == g)
			continue;
		if (l->kind == LINK_NVSWITCH)
			nvs = true;
		if (l->kind == LINK_NVLINK && (gpus >> b & 1u)) {
			char peer[32];
			gpu_busid(d, b, peer, sizeof(peer));
			sl_buf_addf(o, "%s    <nvlink target=\"%s\" count=\"%d\" tclass=\"0x030200\"/>\n",
			    indent, peer, l->count > 0 ? l->count : 1);
		}
	}
	if (nvs)
		sl_buf_addf(o, "%s    <nvlink target=\"fffffff:ff:ff.0\" count=\"%d\" "
		       "tclass=\"0x068000\"/>\n", indent, gpu_links(d, g));
	sl_buf_addf(o, "%s  </gpu>\n%s</pci>\n", indent, indent);
}

static void put_nic(struct sl_buf *o, const struct discovery *d, int i, int dev)
{
	const struct topo_nic *nic = &d->type.nics[i];

	sl_buf_addf(o, "      <pci busid=\"0000:%02x:00.0\" class=\"0x020700\" vendor=\"0x15b3\" "
	       "link_speed=\"%s\" link_width=\"16\">\n", nic_bus(i),
	    model_link_speed(d->type.gpu));
	sl_buf_addf(o, "        <nic>\n          <net name=\"%s\" dev=\"%d\"", nic->name, dev);
	if (nic->gbps > 0)
		sl_buf_addf(o, " speed=\"%lld\"", (long long)nic->gbps * 1000); /* Mbit/s */
	sl_buf_addf(o, "/>\n        </nic>\n      </pci>\n");
}

/* The NUMA node a NIC belongs to: that of the first GPU of its rail. */
static int nic_numa(const struct node_type *t, int i)
{
	for (int g = 0; g < t->ngpus; g++)
		if (t->nics[i].gpus >> g & 1u)
			return t->numa[g];
	return 0;
}

size_t nccl_topo_xml(const struct discovery *d, gpumask_t gpus, const char *const *nics,
		     int nnics, char *buf, size_t n)
{
	struct sl_buf o = SL_BUF_INIT(NCCL_TOPO_XML_MAX);
	const struct node_type *t;
	bool chosen[TOPO_MAX_NICS] = {false};
	int nic_dev[TOPO_MAX_NICS];
	gpumask_t placed = 0;
	int ndev = 0;

	if (n > 0)
		buf[0] = 0;
	if (!d)
		return 0;
	t = &d->type;
	if (t->ngpus < 32)
		gpus &= ((gpumask_t)1 << t->ngpus) - 1;
	for (int i = 0; i < t->nnics; i++)
		for (int k = 0; k < nnics && nics && !chosen[i]; k++)
			chosen[i] = nics[k] && strcmp(nics[k], t->nics[i].name) == 0;
	for (int i = 0; i < t->nnics; i++)
		nic_dev[i] = chosen[i] ? ndev++ : -1;

	sl_buf_addf(&o, "<system version=\"1\">\n");
	for (int numa = 0; numa <= INT8_MAX; numa++) {
		bool used = false;
		for (int g = 0; g < t->ngpus; g++)
			used |= (gpus >> g & 1u) && t->numa[g] == numa;
		for (int i = 0; i < t->nnics; i++)
			used |= chosen[i] && nic_numa(t, i) == numa;
		if (!used)
			continue;
		sl_buf_addf(&o, "  <cpu numaid=\"%d\" arch=\"%s\">\n", numa,
		    t->gpu && t->gpu->name[0] == 'g' && t->gpu->name[1] == 'b' ? "arm64" : "x86_64");
		for (int i = 0; i < t->nnics; i++) {
			gpumask_t rail = 0;
			if (!chosen[i] || nic_numa(t, i) != numa)
				continue;
			for (int g = 0; g < t->ngpus; g++)
				if ((t->nics[i].gpus & gpus & ~placed) >> g & 1u && t->numa[g] == numa)
					rail |= (gpumask_t)1 << g;
			sl_buf_addf(&o, "    <pci busid=\"0000:%02x:00.0\" class=\"0x060400\" link_speed=\"%s\" "
				"link_width=\"16\">\n", switch_bus(i), model_link_speed(t->gpu));
			for (int g = 0; g < t->ngpus; g++)
				if (rail >> g & 1u)
					put_gpu(&o, d, gpus, g, "      ");
			placed |= rail;
			put_nic(&o, d, i, nic_dev[i]);
			sl_buf_addf(&o, "    </pci>\n");
		}
		for (int g = 0; g < t->ngpus; g++)
			if ((gpus & ~placed) >> g & 1u && t->numa[g] == numa)
				put_gpu(&o, d, gpus, g, "    ");
		sl_buf_addf(&o, "  </cpu>\n");
	}
	sl_buf_addf(&o, "</system>\n");
	size_t len = sl_buf_copy_out(&o, buf, n);
	sl_buf_release(&o);
	return len;
}
