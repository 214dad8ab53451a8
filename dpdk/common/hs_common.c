/* SPDX-License-Identifier: BSD-3-Clause */

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "hs_common.h"

volatile bool hs_force_quit;
struct hs_config hs_cfg;

enum {
	OPT_BURST = HS_OPT_COMMON_BASE,
	OPT_RXD,
	OPT_TXD,
	OPT_MBUFS,
	OPT_RUN_TIME,
	OPT_STATS_PERIOD,
	OPT_LINK_TIMEOUT,
	OPT_JSON,
	OPT_TOPOLOGY,
	OPT_PORTMASK,
};

const struct option hs_common_options[] = {
	{ "portmask", required_argument, NULL, OPT_PORTMASK },
	{ "burst", required_argument, NULL, OPT_BURST },
	{ "rxd", required_argument, NULL, OPT_RXD },
	{ "txd", required_argument, NULL, OPT_TXD },
	{ "total-num-mbufs", required_argument, NULL, OPT_MBUFS },
	{ "run-time", required_argument, NULL, OPT_RUN_TIME },
	{ "stats-period", required_argument, NULL, OPT_STATS_PERIOD },
	{ "link-timeout", required_argument, NULL, OPT_LINK_TIMEOUT },
	{ "json", required_argument, NULL, OPT_JSON },
	{ "port-topology", required_argument, NULL, OPT_TOPOLOGY },
	{ NULL, 0, NULL, 0 },
};

static void
hs_signal_handler(int signum)
{
	if (signum == SIGINT || signum == SIGTERM)
		hs_force_quit = true;
}

void
hs_signals_install(void)
{
	hs_force_quit = false;
	signal(SIGINT, hs_signal_handler);
	signal(SIGTERM, hs_signal_handler);
}

void
hs_config_defaults(struct hs_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->portmask = UINT32_MAX;
	cfg->burst = HS_DEFAULT_BURST;
	cfg->rxd = HS_DEFAULT_RXD;
	cfg->txd = HS_DEFAULT_TXD;
	cfg->nb_mbufs = HS_DEFAULT_MBUFS;
	cfg->link_timeout_ms = 10000;
	cfg->paired = true;
}

void
hs_usage_common(FILE *f)
{
	fprintf(f,
		"  -p, --portmask=MASK     hexadecimal mask of ports to use (default: all)\n"
		"  --burst=N               packets per rx/tx burst (1..%d, default %d)\n"
		"  --rxd=N / --txd=N       RX/TX descriptors per queue (default %d/%d)\n"
		"  --total-num-mbufs=N     mbufs in the pool (default %d)\n"
		"  --port-topology=paired|loop  forward to the paired port or back out of\n"
		"                          the receiving port (default paired; an odd\n"
		"                          last port pairs with itself)\n"
		"  --run-time=SEC          stop after SEC seconds (default: until SIGINT)\n"
		"  --stats-period=SEC      print counters every SEC seconds\n"
		"  --link-timeout=MS       wait at most MS for links to come up (default 10000)\n"
		"  --json=FILE             write final counters as JSON to FILE\n",
		HS_MAX_BURST, HS_DEFAULT_BURST, HS_DEFAULT_RXD, HS_DEFAULT_TXD,
		HS_DEFAULT_MBUFS);
}

int
hs_parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (s == NULL || *s == '\0' || *s == '-')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0')
		return -1;
	*v = x;
	return 0;
}

int
hs_parse_double(const char *s, double *v)
{
	char *end;
	double x;

	if (s == NULL || *s == '\0')
		return -1;
	errno = 0;
	x = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(x))
		return -1;
	*v = x;
	return 0;
}

int
hs_parse_range(const char *name, const char *arg, uint64_t lo, uint64_t hi,
	       uint64_t *v)
{
	if (hs_parse_u64(arg, v) < 0 || *v < lo || *v > hi) {
		fprintf(stderr, "invalid --%s '%s': expected an integer in "
			"[%" PRIu64 ", %" PRIu64 "]\n", name, arg, lo, hi);
		return -1;
	}
	return 0;
}

int
hs_parse_common(int opt, const char *arg)
{
	uint64_t v;
	double d;

	switch (opt) {
	case 'p':
	case OPT_PORTMASK:
		if (hs_parse_range("portmask", arg, 1, UINT32_MAX, &v) < 0)
			return -1;
		hs_cfg.portmask = (uint32_t)v;
		return 1;
	case OPT_BURST:
		if (hs_parse_range("burst", arg, 1, HS_MAX_BURST, &v) < 0)
			return -1;
		hs_cfg.burst = (uint16_t)v;
		return 1;
	case OPT_RXD:
		if (hs_parse_range("rxd", arg, 1, 32768, &v) < 0)
			return -1;
		hs_cfg.rxd = (uint16_t)v;
		return 1;
	case OPT_TXD:
		if (hs_parse_range("txd", arg, 1, 32768, &v) < 0)
			return -1;
		hs_cfg.txd = (uint16_t)v;
		return 1;
	case OPT_MBUFS:
		if (hs_parse_range("total-num-mbufs", arg, 512, 1u << 24,
				   &v) < 0)
			return -1;
		hs_cfg.nb_mbufs = (uint32_t)v;
		return 1;
	case OPT_RUN_TIME:
	case OPT_STATS_PERIOD:
		if (hs_parse_double(arg, &d) < 0 || d < 0) {
			fprintf(stderr, "invalid --%s '%s': expected seconds >= 0\n",
				opt == OPT_RUN_TIME ? "run-time" : "stats-period",
				arg);
			return -1;
		}
		if (opt == OPT_RUN_TIME)
			hs_cfg.run_time_s = d;
		else
			hs_cfg.stats_period_s = d;
		return 1;
	case OPT_LINK_TIMEOUT:
		if (hs_parse_range("link-timeout", arg, 0, 600000, &v) < 0)
			return -1;
		hs_cfg.link_timeout_ms = (uint32_t)v;
		return 1;
	case OPT_JSON:
		hs_cfg.json_path = arg;
		return 1;
	case OPT_TOPOLOGY:
		if (strcmp(arg, "paired") == 0) {
			hs_cfg.paired = true;
		} else if (strcmp(arg, "loop") == 0) {
			hs_cfg.paired = false;
		} else {
			fprintf(stderr, "invalid --port-topology '%s': expected "
				"paired or loop\n", arg);
			return -1;
		}
		return 1;
	default:
		return 0;
	}
}

uint32_t
hs_portmask_valid(uint32_t portmask)
{
	uint32_t mask = 0;
	uint16_t port;

	RTE_ETH_FOREACH_DEV(port) {
		if (port < 32 && (portmask & (1u << port)))
			mask |= 1u << port;
	}
	return mask;
}

struct rte_mempool *
hs_pool_create(const char *name, uint32_t n)
{
	return rte_pktmbuf_pool_create(name, n, HS_MBUF_CACHE, 0,
				       RTE_MBUF_DEFAULT_BUF_SIZE,
				       rte_socket_id());
}

int
hs_port_init(uint16_t port, struct rte_mempool *pool, uint16_t rxd,
	     uint16_t txd)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	struct rte_eth_txconf txq_conf;
	struct rte_eth_rxconf rxq_conf;
	int ret;

	memset(&conf, 0, sizeof(conf));
	ret = rte_eth_dev_info_get(port, &info);
	if (ret != 0) {
		fprintf(stderr, "port %u: cannot get device info: %s\n", port,
			strerror(-ret));
		return ret;
	}
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
	ret = rte_eth_dev_configure(port, 1, 1, &conf);
	if (ret < 0) {
		fprintf(stderr, "port %u: cannot configure: %s\n", port,
			strerror(-ret));
		return ret;
	}
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd);
	if (ret < 0) {
		fprintf(stderr, "port %u: cannot adjust descriptors: %s\n", port,
			strerror(-ret));
		return ret;
	}
	rxq_conf = info.default_rxconf;
	rxq_conf.offloads = conf.rxmode.offloads;
	ret = rte_eth_rx_queue_setup(port, 0, rxd, rte_eth_dev_socket_id(port),
				     &rxq_conf, pool);
	if (ret < 0) {
		fprintf(stderr, "port %u: rx queue setup failed: %s\n", port,
			strerror(-ret));
		return ret;
	}
	txq_conf = info.default_txconf;
	txq_conf.offloads = conf.txmode.offloads;
	ret = rte_eth_tx_queue_setup(port, 0, txd, rte_eth_dev_socket_id(port),
				     &txq_conf);
	if (ret < 0) {
		fprintf(stderr, "port %u: tx queue setup failed: %s\n", port,
			strerror(-ret));
		return ret;
	}
	ret = rte_eth_dev_start(port);
	if (ret < 0) {
		fprintf(stderr, "port %u: start failed: %s\n", port,
			strerror(-ret));
		return ret;
	}
	rte_eth_promiscuous_enable(port);
	return 0;
}

/* How many ports of the mask have their link up, and how many are in it. */
static void
hs_links_up(uint32_t portmask, unsigned int *up, unsigned int *ports)
{
	struct rte_eth_link link;
	uint16_t port;

	*up = *ports = 0;
	RTE_ETH_FOREACH_DEV(port) {
		if (port >= 32 || !(portmask & (1u << port)))
			continue;
		(*ports)++;
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(port, &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_UP)
			(*up)++;
	}
}

/* Poll the links like l2fwd's check_all_ports_link_status(). */
int
hs_wait_links(uint32_t portmask, uint32_t timeout_ms)
{
	struct rte_eth_link link;
	char text[RTE_ETH_LINK_MAX_STR_LEN];
	uint32_t waited = 0;
	unsigned int up, ports;
	uint16_t port;
	bool all_up;

	for (;;) {
		hs_links_up(portmask, &up, &ports);
		all_up = up == ports;
		if (all_up || waited >= timeout_ms || hs_force_quit)
			break;
		rte_delay_ms(50);
		waited += 50;
	}
	RTE_ETH_FOREACH_DEV(port) {
		if (port >= 32 || !(portmask & (1u << port)))
			continue;
		rte_eth_link_get_nowait(port, &link);
		rte_eth_link_to_str(text, sizeof(text), &link);
		printf("Port %u %s\n", port, text);
	}
	return all_up ? 0 : -1;
}

/*
 * Wait until every port of the mask has lost its link (the peer left),
 * without touching the queues, for at most timeout_ms. For memif: DPDK
 * 22.11's memif_disconnect() clears the connected flag and unmaps the shared
 * regions at once, from the interrupt thread, so a peer whose lcore is inside
 * rx_burst when the other side leaves can fault. The side that finishes first
 * waits here until the still-polling side has stopped and closed its port.
 * The link goes down as that handler starts, and closing the port while it
 * still runs frees the control channel twice, so the wait ends
 * HS_DISCONNECT_SETTLE_MS after the links went down (the handler closes a few
 * descriptors and unmaps the regions: well under a millisecond; estimate).
 */
#define HS_DISCONNECT_SETTLE_MS 200

int
hs_wait_links_down(uint32_t portmask, uint32_t timeout_ms)
{
	uint32_t waited = 0;
	unsigned int up, ports;
	bool any_up;

	for (;;) {
		hs_links_up(portmask, &up, &ports);
		any_up = up > 0;
		if (!any_up || waited >= timeout_ms || hs_force_quit)
			break;
		rte_delay_ms(10);
		waited += 10;
	}
	if (any_up)
		return -1;
	rte_delay_ms(HS_DISCONNECT_SETTLE_MS);
	return 0;
}

void
hs_ports_close(uint32_t portmask)
{
	uint16_t port;

	RTE_ETH_FOREACH_DEV(port) {
		if (port >= 32 || !(portmask & (1u << port)))
			continue;
		rte_eth_dev_stop(port);
		rte_eth_dev_close(port);
	}
}

uint64_t
hs_ns_to_tsc(uint64_t ns)
{
	return (uint64_t)((double)ns * (double)rte_get_tsc_hz() / 1e9);
}

double
hs_tsc_to_ns(uint64_t cycles)
{
	return (double)cycles * 1e9 / (double)rte_get_tsc_hz();
}

void
hs_stats_sum(const struct hs_lcore_stats *per_lcore,
	     struct hs_lcore_stats *total)
{
	unsigned int i;

	memset(total, 0, sizeof(*total));
	for (i = 0; i < RTE_MAX_LCORE; i++) {
		const struct hs_lcore_stats *s = &per_lcore[i];

		total->rx_packets += s->rx_packets;
		total->rx_bytes += s->rx_bytes;
		total->tx_packets += s->tx_packets;
		total->tx_bytes += s->tx_bytes;
		total->tx_dropped += s->tx_dropped;
		total->app_dropped += s->app_dropped;
		total->busy_polls += s->busy_polls;
		total->idle_polls += s->idle_polls;
		total->busy_cycles += s->busy_cycles;
		total->idle_cycles += s->idle_cycles;
	}
}

static double
hs_ratio(uint64_t a, uint64_t b)
{
	return b == 0 ? 0.0 : (double)a / (double)b;
}

void
hs_json_cycles(struct hs_json *js, const struct hs_lcore_stats *t)
{
	hs_json_obj_open(js, "cycles");
	hs_json_u64(js, "tsc_hz", rte_get_tsc_hz());
	hs_json_u64(js, "packets", t->rx_packets);
	hs_json_u64(js, "busy_cycles", t->busy_cycles);
	hs_json_u64(js, "idle_cycles", t->idle_cycles);
	hs_json_u64(js, "busy_polls", t->busy_polls);
	hs_json_u64(js, "idle_polls", t->idle_polls);
	hs_json_dbl(js, "cycles_per_packet",
		    hs_ratio(t->busy_cycles, t->rx_packets));
	hs_json_dbl(js, "total_cycles_per_packet",
		    hs_ratio(t->busy_cycles + t->idle_cycles, t->rx_packets));
	hs_json_dbl(js, "packets_per_busy_poll",
		    hs_ratio(t->rx_packets, t->busy_polls));
	hs_json_dbl(js, "busy_fraction",
		    hs_ratio(t->busy_cycles, t->busy_cycles + t->idle_cycles));
	hs_json_obj_close(js);
}

void
hs_print_cycles(FILE *f, const struct hs_lcore_stats *t)
{
	fprintf(f, "  cycles: busy %" PRIu64 " idle %" PRIu64
		" polls busy %" PRIu64 " idle %" PRIu64 "\n",
		t->busy_cycles, t->idle_cycles, t->busy_polls, t->idle_polls);
	fprintf(f, "  cycles per packet: %.1f (busy), %.1f (busy+idle) "
		"at %.3f GHz TSC\n",
		hs_ratio(t->busy_cycles, t->rx_packets),
		hs_ratio(t->busy_cycles + t->idle_cycles, t->rx_packets),
		rte_get_tsc_hz() / 1e9);
}

void
hs_json_ports(struct hs_json *js, uint32_t portmask)
{
	struct rte_eth_stats st;
	char key[16];
	uint16_t port;

	hs_json_obj_open(js, "ports");
	RTE_ETH_FOREACH_DEV(port) {
		if (port >= 32 || !(portmask & (1u << port)))
			continue;
		memset(&st, 0, sizeof(st));
		rte_eth_stats_get(port, &st);
		snprintf(key, sizeof(key), "%u", port);
		hs_json_obj_open(js, key);
		hs_json_u64(js, "rx_packets", st.ipackets);
		hs_json_u64(js, "tx_packets", st.opackets);
		hs_json_u64(js, "rx_bytes", st.ibytes);
		hs_json_u64(js, "tx_bytes", st.obytes);
		hs_json_u64(js, "rx_missed", st.imissed);
		hs_json_u64(js, "rx_errors", st.ierrors);
		hs_json_u64(js, "tx_errors", st.oerrors);
		hs_json_u64(js, "rx_nombuf", st.rx_nombuf);
		hs_json_obj_close(js);
	}
	hs_json_obj_close(js);
}

FILE *
hs_json_open(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		fprintf(stderr, "cannot write JSON to %s: %s\n", path,
			strerror(errno));
	return f;
}
