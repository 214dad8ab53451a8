/* SPDX-License-Identifier: BSD-3-Clause
 *
 * rxptx: receive a burst, spend a fixed processing time by spinning on the
 * TSC (calibrated against rte_get_tsc_hz()), swap MACs and transmit (the
 * RXpTX benchmark). The time is spent once per received burst, as the
 * kernel-bypass study defines the benchmark, or once per packet with
 * --proc-per=packet (the simulator's host.app.proc_per).
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_pause.h>

#include "hs_fwd.h"
#include "hs_pkt.h"

enum { OPT_PROC_NS = 2000, OPT_PROC_PER };

static uint64_t proc_ns = 100;
static uint64_t proc_cycles;
static int per_packet; /* 0: once per burst (default), 1: once per packet */

static const struct option rxptx_options[] = {
	{ "proc-ns", required_argument, NULL, OPT_PROC_NS },
	{ "proc-per", required_argument, NULL, OPT_PROC_PER },
	{ NULL, 0, NULL, 0 },
};

static void
rxptx_usage(FILE *f)
{
	fprintf(f, "  --proc-ns=N             processing time in ns "
		"(default 100)\n"
		"  --proc-per=burst|packet spend it once per received burst "
		"(default) or per packet\n");
}

static int
rxptx_parse(int opt, const char *arg)
{
	if (opt == OPT_PROC_PER) {
		if (strcmp(arg, "burst") == 0 || strcmp(arg, "packet") == 0) {
			per_packet = strcmp(arg, "packet") == 0;
			return 1;
		}
		fprintf(stderr, "invalid --proc-per '%s': expected burst or "
			"packet\n", arg);
		return -1;
	}
	if (opt != OPT_PROC_NS)
		return 0;
	if (hs_parse_u64(arg, &proc_ns) < 0 || proc_ns > 1000000000) {
		fprintf(stderr, "invalid --proc-ns '%s': expected 0..1e9 ns\n",
			arg);
		return -1;
	}
	return 1;
}

static int
rxptx_init(__rte_unused struct rte_mempool *pool)
{
	proc_cycles = hs_ns_to_tsc(proc_ns);
	printf("rxptx: %" PRIu64 " ns per %s = %" PRIu64 " TSC cycles\n",
	       proc_ns, per_packet ? "packet" : "burst", proc_cycles);
	return 0;
}

static void
rxptx_spin(void)
{
	uint64_t start = rte_rdtsc();

	while (rte_rdtsc() - start < proc_cycles)
		rte_pause();
}

static uint16_t
rxptx_fwd(__rte_unused unsigned int lcore_id,
	  __rte_unused struct hs_lcore_stats *st, struct rte_mbuf **rx,
	  uint16_t nb_rx, struct rte_mbuf **tx, __rte_unused uint16_t tx_cap)
{
	uint16_t i;

	if (!per_packet && nb_rx > 0)
		rxptx_spin();
	for (i = 0; i < nb_rx; i++) {
		if (per_packet)
			rxptx_spin();
		hs_macswap(rx[i]);
		tx[i] = rx[i];
	}
	return nb_rx;
}

static void
rxptx_json(struct hs_json *js)
{
	hs_json_obj_open(js, "rxptx");
	hs_json_u64(js, "proc_ns", proc_ns);
	hs_json_u64(js, "proc_cycles", proc_cycles);
	hs_json_u64(js, "proc_per_packet", (uint64_t)per_packet);
	hs_json_obj_close(js);
}

static const struct hs_engine rxptx_engine = {
	.name = "rxptx",
	.summary = "spend --proc-ns per burst or packet (TSC spin), swap MACs, forward",
	.options = rxptx_options,
	.usage = rxptx_usage,
	.parse_opt = rxptx_parse,
	.init = rxptx_init,
	.fwd = rxptx_fwd,
	.json = rxptx_json,
};

int
main(int argc, char **argv)
{
	return hs_fwd_main(argc, argv, &rxptx_engine);
}
