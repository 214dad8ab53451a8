/* SPDX-License-Identifier: BSD-3-Clause */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "hs_fwd.h"

#define HS_MAX_OPTIONS 64
#define HS_MAX_PORTS_PER_LCORE 16
#define HS_TX_CAP (4 * HS_MAX_BURST)

struct hs_lcore_conf {
	uint16_t nb_ports;
	uint16_t rx_port[HS_MAX_PORTS_PER_LCORE];
	uint16_t tx_port[HS_MAX_PORTS_PER_LCORE];
} __rte_cache_aligned;

static const struct hs_engine *engine;
static struct hs_lcore_conf lcore_conf[RTE_MAX_LCORE];
static struct hs_lcore_stats lcore_stats[RTE_MAX_LCORE];
static uint32_t enabled_ports;
static uint64_t deadline_tsc;
static uint64_t start_tsc, stop_tsc;

static void
hs_fwd_usage(const char *prog)
{
	fprintf(stderr, "%s: %s\n\nUsage: %s [EAL options] -- [options]\n\n",
		engine->name, engine->summary, prog);
	hs_usage_common(stderr);
	if (engine->usage != NULL)
		engine->usage(stderr);
}

static int
hs_fwd_parse_args(int argc, char **argv)
{
	struct option longopts[HS_MAX_OPTIONS];
	unsigned int n = 0, i;
	int opt, ret;

	for (i = 0; hs_common_options[i].name != NULL; i++)
		longopts[n++] = hs_common_options[i];
	for (i = 0; engine->options != NULL && engine->options[i].name != NULL &&
	     n < HS_MAX_OPTIONS - 2; i++)
		longopts[n++] = engine->options[i];
	longopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	memset(&longopts[n], 0, sizeof(longopts[n]));

	optind = 1;
	while ((opt = getopt_long(argc, argv, HS_COMMON_SHORTOPTS "h", longopts,
				  NULL)) != EOF) {
		if (opt == 'h') {
			hs_fwd_usage(argv[0]);
			exit(EXIT_SUCCESS);
		}
		ret = hs_parse_common(opt, optarg);
		if (ret == 0 && engine->parse_opt != NULL)
			ret = engine->parse_opt(opt, optarg);
		if (ret <= 0) {
			if (ret == 0)
				hs_fwd_usage(argv[0]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* Spread the enabled ports over the lcores; pair ports as testpmd does. */
static void
hs_fwd_assign_ports(void)
{
	uint16_t ports[HS_MAX_PORTS];
	unsigned int lcores[RTE_MAX_LCORE];
	unsigned int nb_lcores = 0, nb_ports = 0, lcore, i;
	uint16_t port;

	RTE_LCORE_FOREACH(lcore)
		lcores[nb_lcores++] = lcore;
	RTE_ETH_FOREACH_DEV(port) {
		if (port < 32 && (enabled_ports & (1u << port)))
			ports[nb_ports++] = port;
	}
	for (i = 0; i < nb_ports; i++) {
		struct hs_lcore_conf *lc = &lcore_conf[lcores[i % nb_lcores]];
		uint16_t dst = ports[i];

		if (hs_cfg.paired && i + 1 < nb_ports && i % 2 == 0)
			dst = ports[i + 1];
		else if (hs_cfg.paired && i % 2 == 1)
			dst = ports[i - 1];
		if (lc->nb_ports >= HS_MAX_PORTS_PER_LCORE)
			continue;
		lc->rx_port[lc->nb_ports] = ports[i];
		lc->tx_port[lc->nb_ports] = dst;
		lc->nb_ports++;
		printf("lcore %u: rx port %u -> tx port %u\n",
		       lcores[i % nb_lcores], ports[i], dst);
	}
}

static void
hs_fwd_print(FILE *f)
{
	struct hs_lcore_stats t;

	hs_stats_sum(lcore_stats, &t);
	fprintf(f, "%s: rx %" PRIu64 " tx %" PRIu64 " tx_dropped %" PRIu64
		" app_dropped %" PRIu64 "\n", engine->name, t.rx_packets,
		t.tx_packets, t.tx_dropped, t.app_dropped);
}

static inline void
hs_fwd_poll_port(unsigned int lcore_id, struct hs_lcore_stats *st,
		 uint16_t rx_port, uint16_t tx_port, struct rte_mbuf **rx,
		 struct rte_mbuf **tx, uint16_t *nb_rx_out)
{
	uint16_t nb_rx, nb_tx, sent, i;

	nb_rx = rte_eth_rx_burst(rx_port, 0, rx, hs_cfg.burst);
	*nb_rx_out += nb_rx;
	if (nb_rx == 0)
		return;
	st->rx_packets += nb_rx;
	for (i = 0; i < nb_rx; i++)
		st->rx_bytes += rte_pktmbuf_pkt_len(rx[i]);
	nb_tx = engine->fwd(lcore_id, st, rx, nb_rx, tx, HS_TX_CAP);
	if (nb_tx == 0)
		return;
	sent = rte_eth_tx_burst(tx_port, 0, tx, nb_tx);
	for (i = 0; i < sent; i++)
		st->tx_bytes += rte_pktmbuf_pkt_len(tx[i]);
	st->tx_packets += sent;
	if (unlikely(sent < nb_tx)) {
		st->tx_dropped += nb_tx - sent;
		rte_pktmbuf_free_bulk(&tx[sent], nb_tx - sent);
	}
}

static void
hs_fwd_periodic(uint64_t now, uint64_t *next_stats)
{
	uint64_t period = (uint64_t)(hs_cfg.stats_period_s * rte_get_tsc_hz());

	if (deadline_tsc != 0 && now >= deadline_tsc)
		hs_force_quit = true;
	if (period != 0 && now >= *next_stats) {
		hs_fwd_print(stdout);
		fflush(stdout);
		*next_stats = now + period;
	}
}

static int
hs_fwd_lcore_loop(__rte_unused void *arg)
{
	unsigned int lcore_id = rte_lcore_id();
	struct hs_lcore_conf *lc = &lcore_conf[lcore_id];
	struct hs_lcore_stats *st = &lcore_stats[lcore_id];
	struct rte_mbuf *rx[HS_MAX_BURST];
	struct rte_mbuf *tx[HS_TX_CAP];
	bool is_main = lcore_id == rte_get_main_lcore();
	uint64_t t0, t1, next_stats = 0;
	uint16_t nb_rx, i;

	if (lc->nb_ports == 0 && !is_main)
		return 0;
	t0 = rte_rdtsc();
	while (!hs_force_quit) {
		nb_rx = 0;
		for (i = 0; i < lc->nb_ports; i++)
			hs_fwd_poll_port(lcore_id, st, lc->rx_port[i],
					 lc->tx_port[i], rx, tx, &nb_rx);
		t1 = rte_rdtsc();
		if (nb_rx != 0) {
			st->busy_polls++;
			st->busy_cycles += t1 - t0;
		} else {
			st->idle_polls++;
			st->idle_cycles += t1 - t0;
		}
		if (is_main)
			hs_fwd_periodic(t1, &next_stats);
		if (lc->nb_ports == 0)
			rte_delay_us_sleep(1000);
		t0 = t1;
	}
	return 0;
}

static void
hs_fwd_report(void)
{
	struct hs_lcore_stats t;
	struct hs_json js;
	FILE *f;
	double wall_s = (double)(stop_tsc - start_tsc) / rte_get_tsc_hz();

	hs_stats_sum(lcore_stats, &t);
	printf("\n---- %s final counters ----\n", engine->name);
	hs_fwd_print(stdout);
	if (engine->print != NULL)
		engine->print(stdout);
	hs_print_cycles(stdout, &t);
	fflush(stdout);
	if (hs_cfg.json_path == NULL)
		return;
	f = hs_json_open(hs_cfg.json_path);
	if (f == NULL)
		return;
	hs_json_begin(&js, f);
	hs_json_obj_open(&js, "app");
	hs_json_str(&js, "name", engine->name);
	hs_json_u64(&js, "rx_packets", t.rx_packets);
	hs_json_u64(&js, "rx_bytes", t.rx_bytes);
	hs_json_u64(&js, "tx_packets", t.tx_packets);
	hs_json_u64(&js, "tx_bytes", t.tx_bytes);
	hs_json_u64(&js, "tx_dropped", t.tx_dropped);
	hs_json_u64(&js, "app_dropped", t.app_dropped);
	hs_json_u64(&js, "burst", hs_cfg.burst);
	hs_json_u64(&js, "rxd", hs_cfg.rxd);
	hs_json_u64(&js, "txd", hs_cfg.txd);
	hs_json_obj_close(&js);
	if (engine->json != NULL)
		engine->json(&js);
	hs_json_cycles(&js, &t);
	hs_json_ports(&js, enabled_ports);
	hs_json_obj_open(&js, "sim");
	hs_json_dbl(&js, "wall_s", wall_s);
	hs_json_obj_close(&js);
	hs_json_end(&js);
	fclose(f);
}

int
hs_fwd_main(int argc, char **argv, const struct hs_engine *eng)
{
	struct rte_mempool *pool;
	uint16_t port;
	int ret;

	engine = eng;
	hs_config_defaults(&hs_cfg);
	hs_signals_install();
	ret = rte_eal_init(argc, argv);
	if (ret < 0)
		HS_FATAL("%s: EAL initialisation failed: %s\n", eng->name,
			 rte_strerror(rte_errno));
	argc -= ret;
	argv += ret;
	argv[0] = (char *)(uintptr_t)eng->name;
	if (hs_fwd_parse_args(argc, argv) < 0)
		HS_FATAL("%s: invalid arguments\n", eng->name);

	enabled_ports = hs_portmask_valid(hs_cfg.portmask);
	if (enabled_ports == 0)
		HS_FATAL("%s: no Ethernet ports available (portmask 0x%x); "
			 "give a NIC or a --vdev\n", eng->name, hs_cfg.portmask);
	pool = hs_pool_create("hs_pool", hs_cfg.nb_mbufs);
	if (pool == NULL)
		HS_FATAL("%s: cannot create mbuf pool of %u mbufs: %s\n",
			 eng->name, hs_cfg.nb_mbufs, rte_strerror(rte_errno));
	RTE_ETH_FOREACH_DEV(port) {
		if (port >= 32 || !(enabled_ports & (1u << port)))
			continue;
		if (hs_port_init(port, pool, hs_cfg.rxd, hs_cfg.txd) != 0)
			HS_FATAL("%s: cannot initialise port %u\n", eng->name,
				 port);
	}
	if (eng->init != NULL && eng->init(pool) != 0)
		HS_FATAL("%s: engine initialisation failed\n", eng->name);
	if (hs_wait_links(enabled_ports, hs_cfg.link_timeout_ms) != 0)
		printf("%s: warning: not every link is up; polling anyway\n",
		       eng->name);
	hs_fwd_assign_ports();

	start_tsc = rte_rdtsc();
	if (hs_cfg.run_time_s > 0)
		deadline_tsc = start_tsc +
			(uint64_t)(hs_cfg.run_time_s * rte_get_tsc_hz());
	printf("%s: forwarding started, burst %u; Ctrl-C to stop\n",
	       eng->name, hs_cfg.burst);
	fflush(stdout);
	rte_eal_mp_remote_launch(hs_fwd_lcore_loop, NULL, CALL_MAIN);
	rte_eal_mp_wait_lcore();
	stop_tsc = rte_rdtsc();

	hs_fwd_report();
	hs_ports_close(enabled_ports);
	rte_eal_cleanup();
	return 0;
}
