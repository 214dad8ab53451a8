/* SPDX-License-Identifier: BSD-3-Clause
 *
 * loadgen: the hostsim load generator as a DPDK program. One lcore paces
 * frames out of --tx-port by the TSC and reads --rx-port in the same loop.
 * Every frame carries the hostsim tag (magic, flow, sequence, transmit time)
 * and returning frames are matched by sequence number into a log-linear
 * latency histogram. A trial reports sent/received/lost/reordered counts,
 * offered and achieved rates; --msb runs the bandwidth test, a bisection
 * over trials for the highest offered rate whose drop rate stays at or
 * below --msb-threshold, and reports every trial as the curve.
 *
 * A frame the TX queue refuses is, by default, counted as sent and lost: a
 * hardware generator puts it on the wire regardless and the system under
 * test (for memif, the peer's full ring) is what dropped it.
 */

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "hs_common.h"
#include "hs_pkt.h"
#include "lg_hist.h"
#include "lg_source.h"
#include "lg_track.h"
#include "lg_trial.h"

enum {
	OPT_TX_PORT = 3000, OPT_RX_PORT, OPT_RATE, OPT_SIZE, OPT_DIST,
	OPT_FLOWS, OPT_SRC_MAC, OPT_DST_MAC, OPT_SRC_IP, OPT_DST_IP,
	OPT_SPORT, OPT_DPORT, OPT_DURATION, OPT_WARMUP, OPT_DRAIN, OPT_PCAP,
	OPT_PCAP_SPEED, OPT_LOOP, OPT_PCAP_MAX, OPT_TAG_OFFSET, OPT_NO_TAG,
	OPT_SEED, OPT_LINE_RATE, OPT_MSB, OPT_MSB_THRESHOLD,
	OPT_MSB_RESOLUTION, OPT_MSB_MAX_TRIALS, OPT_TX_REFUSED,
	OPT_HISTOGRAM, OPT_KEEP_DST_MAC, OPT_PEER_EXIT_WAIT,
};

static const struct option lg_options[] = {
	{ "tx-port", required_argument, NULL, OPT_TX_PORT },
	{ "rx-port", required_argument, NULL, OPT_RX_PORT },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "dist", required_argument, NULL, OPT_DIST },
	{ "flows", required_argument, NULL, OPT_FLOWS },
	{ "src-mac", required_argument, NULL, OPT_SRC_MAC },
	{ "dst-mac", required_argument, NULL, OPT_DST_MAC },
	{ "src-ip", required_argument, NULL, OPT_SRC_IP },
	{ "dst-ip", required_argument, NULL, OPT_DST_IP },
	{ "sport", required_argument, NULL, OPT_SPORT },
	{ "dport", required_argument, NULL, OPT_DPORT },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "drain", required_argument, NULL, OPT_DRAIN },
	{ "pcap", required_argument, NULL, OPT_PCAP },
	{ "pcap-speed", required_argument, NULL, OPT_PCAP_SPEED },
	{ "loop", required_argument, NULL, OPT_LOOP },
	{ "pcap-max-frames", required_argument, NULL, OPT_PCAP_MAX },
	{ "keep-dst-mac", no_argument, NULL, OPT_KEEP_DST_MAC },
	{ "tag-offset", required_argument, NULL, OPT_TAG_OFFSET },
	{ "no-tag", no_argument, NULL, OPT_NO_TAG },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "line-rate", required_argument, NULL, OPT_LINE_RATE },
	{ "msb", no_argument, NULL, OPT_MSB },
	{ "msb-threshold", required_argument, NULL, OPT_MSB_THRESHOLD },
	{ "msb-resolution", required_argument, NULL, OPT_MSB_RESOLUTION },
	{ "msb-max-trials", required_argument, NULL, OPT_MSB_MAX_TRIALS },
	{ "tx-refused", required_argument, NULL, OPT_TX_REFUSED },
	{ "histogram", no_argument, NULL, OPT_HISTOGRAM },
	{ "peer-exit-wait", required_argument, NULL, OPT_PEER_EXIT_WAIT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static struct lg_ctx lg;

static void
lg_usage(FILE *f)
{
	fprintf(f,
		"loadgen: hardware-style load generator with latency and MSB search\n\n"
		"Usage: loadgen [EAL options] -- [options]\n\n");
	hs_usage_common(f);
	fprintf(f,
		"  --tx-port=N / --rx-port=N  ports to send on / receive from (default 0/tx)\n"
		"  --rate=R                offered load: 10Gbps, 500Mbps, 1.5Mpps, 20kpps or\n"
		"                          50%% of line rate (default 100%%); bps are frame bits\n"
		"                          including the 4-byte FCS\n"
		"  --size=S                frame size incl. FCS: 64, a list 64,128,256 (equal\n"
		"                          weights) or imix (64/594/1518 at 7:4:1); default 64\n"
		"  --dist=const|poisson    inter-arrival distribution (default const)\n"
		"  --flows=N               flows, by UDP source port sport..sport+N-1 (default 1)\n"
		"  --src-mac/--dst-mac=MAC Ethernet addresses (default port MAC / 02:00:00:00:00:02)\n"
		"  --src-ip/--dst-ip=A.B.C.D  IPv4 addresses (default 10.0.0.1 / 10.0.0.2)\n"
		"  --sport=N / --dport=N   UDP ports (default 1024 / 9)\n"
		"  --duration=SEC          measured time per trial (default 1)\n"
		"  --warmup=SEC            traffic before measuring, per trial (default 0)\n"
		"  --drain=SEC             time to wait for late frames (default 0.1)\n"
		"  --pcap=FILE             replay a pcap instead of synthetic traffic;\n"
		"                          its timestamps pace it unless --rate is given\n"
		"  --pcap-speed=X          scale trace timing (2 = twice as fast; default 1)\n"
		"  --loop=N                play the trace N times, 0 = until --duration (default 1)\n"
		"  --pcap-max-frames=N     frames loaded from the pcap (default 1048576)\n"
		"  --keep-dst-mac          do not rewrite trace frames' destination MAC\n"
		"  --tag-offset=N          where the 16-byte tag goes (default 42)\n"
		"  --no-tag                send frames untouched: arrivals are counted,\n"
		"                          not matched, no latency\n"
		"  --seed=N                seed for IMIX and Poisson draws (default 1)\n"
		"  --line-rate=R           line rate in bps (default: link speed, else 10Gbps)\n"
		"  --msb                   bandwidth test: bisect --rate downwards\n"
		"  --msb-threshold=X       highest acceptable drop rate (default 0.01)\n"
		"  --msb-resolution=R      stop when the bracket is narrower (default 1%%)\n"
		"  --msb-max-trials=N      trial limit (default 16)\n"
		"  --tx-refused=lost|retry frames the TX queue refuses: count them sent\n"
		"                          and lost (default) or retry them\n"
		"  --histogram             include the latency histogram buckets in --json\n"
		"  --peer-exit-wait=MS     after the results, wait up to MS for the peer to\n"
		"                          leave (links down) before closing the ports: a\n"
		"                          memif peer still polling can fault when this side\n"
		"                          disconnects first (default 0: close at once)\n");
}

static int
lg_parse_rate_str(const char *s, struct lg_rate *r)
{
	static const struct {
		const char *suffix;
		enum lg_rate_unit unit;
		double mult;
	} units[] = {
		{ "Gbps", LG_RATE_BPS, 1e9 }, { "Mbps", LG_RATE_BPS, 1e6 },
		{ "kbps", LG_RATE_BPS, 1e3 }, { "bps", LG_RATE_BPS, 1 },
		{ "Mpps", LG_RATE_PPS, 1e6 }, { "kpps", LG_RATE_PPS, 1e3 },
		{ "pps", LG_RATE_PPS, 1 }, { "%", LG_RATE_PCT, 1 },
	};
	char *end;
	double v;
	unsigned int i;

	v = strtod(s, &end);
	if (end == s || !isfinite(v) || v <= 0)
		goto bad;
	for (i = 0; i < RTE_DIM(units); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			r->unit = units[i].unit;
			r->value = v * units[i].mult;
			if (r->unit == LG_RATE_PCT && v > 100)
				goto bad;
			return 0;
		}
	}
bad:
	fprintf(stderr, "invalid rate '%s': expected e.g. 10Gbps, 250Mbps, "
		"1.5Mpps, 20kpps or 0..100%%\n", s);
	return -1;
}

static int
lg_parse_size(const char *s)
{
	char buf[256], *tok, *save = NULL;
	uint64_t v;

	if (strcmp(s, "imix") == 0) {
		lg.src.nb_sizes = 3;
		lg.src.sizes[0] = 64;
		lg.src.weights[0] = 7;
		lg.src.sizes[1] = 594;
		lg.src.weights[1] = 4;
		lg.src.sizes[2] = 1518;
		lg.src.weights[2] = 1;
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", s);
	lg.src.nb_sizes = 0;
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (hs_parse_u64(tok, &v) < 0 || v < 64 || v > LG_MAX_FRAME ||
		    lg.src.nb_sizes >= LG_MAX_SIZES) {
			fprintf(stderr, "invalid --size '%s': expected imix or up "
				"to %d sizes in 64..%d\n", s, LG_MAX_SIZES,
				LG_MAX_FRAME);
			return -1;
		}
		lg.src.sizes[lg.src.nb_sizes] = (uint16_t)v;
		lg.src.weights[lg.src.nb_sizes] = 1;
		lg.src.nb_sizes++;
	}
	return lg.src.nb_sizes > 0 ? 0 : -1;
}

static int
lg_parse_ip(const char *s, uint32_t *ip)
{
	unsigned int a, b, c, d;
	char tail;

	if (sscanf(s, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4 ||
	    a > 255 || b > 255 || c > 255 || d > 255) {
		fprintf(stderr, "invalid IPv4 address '%s'\n", s);
		return -1;
	}
	*ip = a << 24 | b << 16 | c << 8 | d;
	return 0;
}

static int
lg_parse_sec(const char *name, const char *s, double *v)
{
	if (hs_parse_double(s, v) < 0 || *v < 0 || *v > 86400) {
		fprintf(stderr, "invalid --%s '%s': expected seconds\n", name, s);
		return -1;
	}
	return 0;
}

static int
lg_parse_port(const char *name, const char *s, uint16_t *port)
{
	uint64_t v;

	if (hs_parse_u64(s, &v) < 0 || v >= RTE_MAX_ETHPORTS) {
		fprintf(stderr, "invalid --%s '%s'\n", name, s);
		return -1;
	}
	*port = (uint16_t)v;
	return 0;
}

static int
lg_parse_opt(int opt, const char *arg)
{
	uint64_t v;

	switch (opt) {
	case OPT_TX_PORT:
		return lg_parse_port("tx-port", arg, &lg.tx_port);
	case OPT_RX_PORT:
		lg.rx_port_set = true;
		return lg_parse_port("rx-port", arg, &lg.rx_port);
	case OPT_RATE:
		lg.rate_set = true;
		return lg_parse_rate_str(arg, &lg.rate);
	case OPT_SIZE:
		return lg_parse_size(arg);
	case OPT_DIST:
		if (strcmp(arg, "const") == 0)
			lg.src.dist = LG_DIST_CONST;
		else if (strcmp(arg, "poisson") == 0)
			lg.src.dist = LG_DIST_POISSON;
		else {
			fprintf(stderr, "invalid --dist '%s': const or poisson\n",
				arg);
			return -1;
		}
		return 0;
	case OPT_FLOWS:
		if (hs_parse_u64(arg, &v) < 0 || v < 1 || v > 65535) {
			fprintf(stderr, "invalid --flows '%s': 1..65535\n", arg);
			return -1;
		}
		lg.src.flows = (uint32_t)v;
		return 0;
	case OPT_SRC_MAC:
	case OPT_DST_MAC:
		if (rte_ether_unformat_addr(arg, opt == OPT_SRC_MAC ?
					    &lg.src.src_mac :
					    &lg.src.dst_mac) < 0) {
			fprintf(stderr, "invalid MAC address '%s'\n", arg);
			return -1;
		}
		return 0;
	case OPT_SRC_IP:
		return lg_parse_ip(arg, &lg.src.src_ip);
	case OPT_DST_IP:
		return lg_parse_ip(arg, &lg.src.dst_ip);
	case OPT_SPORT:
	case OPT_DPORT:
		if (hs_parse_u64(arg, &v) < 0 || v > 65535) {
			fprintf(stderr, "invalid UDP port '%s'\n", arg);
			return -1;
		}
		if (opt == OPT_SPORT)
			lg.src.sport_base = (uint16_t)v;
		else
			lg.src.dport = (uint16_t)v;
		return 0;
	case OPT_DURATION:
		return lg_parse_sec("duration", arg, &lg.duration_s);
	case OPT_WARMUP:
		return lg_parse_sec("warmup", arg, &lg.warmup_s);
	case OPT_DRAIN:
		return lg_parse_sec("drain", arg, &lg.drain_s);
	case OPT_PEER_EXIT_WAIT: {
		uint64_t v;

		if (hs_parse_range("peer-exit-wait", arg, 0, 600000, &v) < 0)
			return -1;
		lg.peer_exit_wait_ms = (uint32_t)v;
		return 0;
	}
	case OPT_PCAP:
		lg.pcap = arg;
		return 0;
	case OPT_PCAP_SPEED:
		if (hs_parse_double(arg, &lg.src.trace_speed) < 0 ||
		    lg.src.trace_speed <= 0) {
			fprintf(stderr, "invalid --pcap-speed '%s'\n", arg);
			return -1;
		}
		return 0;
	case OPT_LOOP:
		if (hs_parse_u64(arg, &v) < 0 || v > UINT32_MAX) {
			fprintf(stderr, "invalid --loop '%s'\n", arg);
			return -1;
		}
		lg.loops = (uint32_t)v;
		return 0;
	case OPT_PCAP_MAX:
		if (hs_parse_u64(arg, &v) < 0 || v < 1 || v > (1u << 26)) {
			fprintf(stderr, "invalid --pcap-max-frames '%s'\n", arg);
			return -1;
		}
		lg.pcap_max = (uint32_t)v;
		return 0;
	case OPT_KEEP_DST_MAC:
		lg.src.rewrite_dst_mac = false;
		return 0;
	case OPT_TAG_OFFSET:
		if (hs_parse_u64(arg, &v) < 0 || v > LG_MAX_FRAME - HS_TAG_LEN) {
			fprintf(stderr, "invalid --tag-offset '%s'\n", arg);
			return -1;
		}
		lg.src.tag_off = (uint16_t)v;
		return 0;
	case OPT_NO_TAG:
		lg.src.tag = false;
		return 0;
	case OPT_SEED:
		if (hs_parse_u64(arg, &lg.seed) < 0) {
			fprintf(stderr, "invalid --seed '%s'\n", arg);
			return -1;
		}
		return 0;
	case OPT_LINE_RATE: {
		struct lg_rate r;

		if (lg_parse_rate_str(arg, &r) < 0 || r.unit != LG_RATE_BPS) {
			fprintf(stderr, "--line-rate takes bps, e.g. 100Gbps\n");
			return -1;
		}
		lg.line_bps = r.value;
		return 0;
	}
	case OPT_MSB:
		lg.msb = true;
		return 0;
	case OPT_MSB_THRESHOLD:
		if (hs_parse_double(arg, &lg.msb_threshold) < 0 ||
		    lg.msb_threshold < 0 || lg.msb_threshold >= 1) {
			fprintf(stderr, "invalid --msb-threshold '%s': 0 <= x < 1\n",
				arg);
			return -1;
		}
		return 0;
	case OPT_MSB_RESOLUTION:
		return lg_parse_rate_str(arg, &lg.msb_resolution);
	case OPT_MSB_MAX_TRIALS:
		if (hs_parse_u64(arg, &v) < 0 || v < 1 || v > LG_MAX_CURVE) {
			fprintf(stderr, "invalid --msb-max-trials '%s': 1..%d\n",
				arg, LG_MAX_CURVE);
			return -1;
		}
		lg.msb_max_trials = (uint32_t)v;
		return 0;
	case OPT_TX_REFUSED:
		if (strcmp(arg, "lost") == 0)
			lg.tx_retry = false;
		else if (strcmp(arg, "retry") == 0)
			lg.tx_retry = true;
		else {
			fprintf(stderr, "invalid --tx-refused '%s': lost or retry\n",
				arg);
			return -1;
		}
		return 0;
	case OPT_HISTOGRAM:
		lg.histogram = true;
		return 0;
	default:
		return -1;
	}
}

static int
lg_parse_args(int argc, char **argv)
{
	struct option longopts[RTE_DIM(lg_options) + 16];
	unsigned int n = 0, i;
	int opt, ret;

	for (i = 0; hs_common_options[i].name != NULL; i++)
		longopts[n++] = hs_common_options[i];
	for (i = 0; i < RTE_DIM(lg_options); i++)
		longopts[n++] = lg_options[i];
	optind = 1;
	while ((opt = getopt_long(argc, argv, HS_COMMON_SHORTOPTS "h",
				  longopts, NULL)) != EOF) {
		if (opt == 'h') {
			lg_usage(stdout);
			exit(EXIT_SUCCESS);
		}
		ret = hs_parse_common(opt, optarg);
		if (ret < 0)
			return -1;
		if (ret == 1)
			continue;
		if (opt == '?' || lg_parse_opt(opt, optarg) < 0) {
			lg_usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return 0;
}

static void
lg_json_trial(struct hs_json *js, const char *key, const struct lg_trial *t,
	      const struct lg_ctx *c, bool full)
{
	double mean = lg_source_mean_size(&c->src);

	hs_json_obj_open(js, key);
	if (full) {
		hs_json_u64(js, "tx_packets", t->tx_packets);
		hs_json_u64(js, "rx_packets", t->rx_packets);
		hs_json_u64(js, "lost_packets", t->lost_packets);
		hs_json_u64(js, "reordered_packets", t->reordered_packets);
		hs_json_u64(js, "duplicate_packets", t->duplicate_packets);
		hs_json_u64(js, "unmatched_packets", t->unmatched_packets);
		hs_json_u64(js, "tx_refused", t->tx_refused);
		hs_json_u64(js, "tx_bytes", t->tx_bytes);
		hs_json_u64(js, "rx_bytes", t->rx_bytes);
	}
	hs_json_dbl(js, "drop_rate", t->drop_rate);
	hs_json_dbl(js, "target_bps", t->target_bps);
	hs_json_dbl(js, "target_pps", t->target_pps);
	hs_json_dbl(js, "offered_bps", t->offered_bps);
	hs_json_dbl(js, "achieved_bps", t->achieved_bps);
	hs_json_dbl(js, "offered_pps", t->offered_pps);
	hs_json_dbl(js, "achieved_pps", t->achieved_pps);
	if (full) {
		hs_json_dbl(js, "line_rate_bps", c->line_bps);
		hs_json_dbl(js, "line_rate_pps",
			    c->line_bps / ((mean + HS_WIRE_OVERHEAD) * 8));
		hs_json_dbl(js, "mean_frame_bytes", mean);
		hs_json_dbl(js, "duration_s", t->duration_s);
	} else {
		hs_json_u64(js, "tx_packets", t->tx_packets);
		hs_json_u64(js, "rx_packets", t->rx_packets);
	}
	hs_json_obj_open(js, "latency_ns");
	hs_json_u64(js, "count", t->lat_count);
	hs_json_u64(js, "min", t->lat_min);
	hs_json_dbl(js, "mean", t->lat_mean);
	hs_json_u64(js, "p50", t->lat_p50);
	hs_json_u64(js, "p90", t->lat_p90);
	hs_json_u64(js, "p99", t->lat_p99);
	hs_json_u64(js, "p999", t->lat_p999);
	hs_json_u64(js, "max", t->lat_max);
	hs_json_dbl(js, "std", t->lat_std);
	hs_json_obj_close(js);
	if (full && c->histogram && !c->msb)
		lg_hist_json(&c->hist, js, "latency_histogram_ns", 1);
	hs_json_obj_close(js);
}

static void
lg_print_trial(const struct lg_trial *t)
{
	printf("  tx %" PRIu64 " rx %" PRIu64 " lost %" PRIu64 " (drop rate "
	       "%.6f) reordered %" PRIu64 " duplicate %" PRIu64 " unmatched %"
	       PRIu64 " refused %" PRIu64 "\n", t->tx_packets, t->rx_packets,
	       t->lost_packets, t->drop_rate, t->reordered_packets,
	       t->duplicate_packets, t->unmatched_packets, t->tx_refused);
	printf("  offered %.6g bps %.6g pps, achieved %.6g bps %.6g pps "
	       "over %.3f s\n", t->offered_bps, t->offered_pps,
	       t->achieved_bps, t->achieved_pps, t->duration_s);
	printf("  latency ns: min %" PRIu64 " mean %.0f p50 %" PRIu64 " p90 %"
	       PRIu64 " p99 %" PRIu64 " p99.9 %" PRIu64 " max %" PRIu64
	       " std %.0f (%" PRIu64 " samples)\n", t->lat_min, t->lat_mean,
	       t->lat_p50, t->lat_p90, t->lat_p99, t->lat_p999, t->lat_max,
	       t->lat_std, t->lat_count);
}

static int
lg_write_json(const struct lg_trial *main_trial, const struct lg_trial *curve,
	      uint32_t nb_trials, int best, double resolution_pps,
	      double wall_s)
{
	struct hs_json js;
	uint32_t order[LG_MAX_CURVE], i, j, tmp;
	FILE *f = hs_json_open(hs_cfg.json_path);

	if (f == NULL)
		return -1;
	hs_json_begin(&js, f);
	lg_json_trial(&js, "loadgen", main_trial, &lg, true);
	if (lg.msb) {
		const struct lg_trial *b = best >= 0 ? &curve[best] : NULL;

		hs_json_obj_open(&js, "msb");
		hs_json_dbl(&js, "bps", b ? b->offered_bps : 0.0);
		hs_json_dbl(&js, "pps", b ? b->offered_pps : 0.0);
		hs_json_dbl(&js, "target_bps", b ? b->target_bps : 0.0);
		hs_json_dbl(&js, "threshold", lg.msb_threshold);
		hs_json_dbl(&js, "resolution_bps", resolution_pps *
			    lg_source_mean_size(&lg.src) * 8);
		hs_json_u64(&js, "trials", nb_trials);
		hs_json_u64(&js, "found", b != NULL);
		/* the curve, ordered by offered rate */
		for (i = 0; i < nb_trials; i++)
			order[i] = i;
		for (i = 1; i < nb_trials; i++)
			for (j = i; j > 0 && curve[order[j]].offered_bps <
			     curve[order[j - 1]].offered_bps; j--) {
				tmp = order[j];
				order[j] = order[j - 1];
				order[j - 1] = tmp;
			}
		hs_json_arr_open(&js, "curve");
		for (i = 0; i < nb_trials; i++)
			lg_json_trial(&js, NULL, &curve[order[i]], &lg, false);
		hs_json_arr_close(&js);
		hs_json_obj_close(&js);
	}
	hs_json_cycles(&js, &lg.cyc);
	hs_json_ports(&js, (1u << lg.tx_port) | (1u << lg.rx_port));
	hs_json_obj_open(&js, "sim");
	hs_json_dbl(&js, "wall_s", wall_s);
	hs_json_u64(&js, "seed", lg.seed);
	hs_json_obj_close(&js);
	hs_json_end(&js);
	fclose(f);
	return 0;
}

static void
lg_defaults(void)
{
	memset(&lg, 0, sizeof(lg));
	lg.rate.unit = LG_RATE_PCT;
	lg.rate.value = 100;
	lg.duration_s = 1.0;
	lg.drain_s = 0.1;
	lg.loops = 1;
	lg.pcap_max = 1u << 20;
	lg.seed = 1;
	lg.msb_threshold = 0.01;
	lg.msb_resolution.unit = LG_RATE_PCT;
	lg.msb_resolution.value = 1;
	lg.msb_max_trials = 16;
	lg.src.nb_sizes = 1;
	lg.src.sizes[0] = 64;
	lg.src.weights[0] = 1;
	lg.src.flows = 1;
	lg.src.sport_base = 1024;
	lg.src.dport = 9;
	lg.src.src_ip = 10u << 24 | 1;
	lg.src.dst_ip = 10u << 24 | 2;
	lg.src.tag = true;
	lg.src.tag_off = HS_TAG_DEFAULT_OFFSET;
	lg.src.trace_speed = 1.0;
	lg.src.rewrite_dst_mac = true;
	rte_ether_unformat_addr("02:00:00:00:00:02", &lg.src.dst_mac);
}

static void
lg_setup_ports(void)
{
	struct rte_eth_link link;
	struct rte_ether_addr zero;
	uint32_t mask;

	if (!rte_eth_dev_is_valid_port(lg.tx_port) ||
	    !rte_eth_dev_is_valid_port(lg.rx_port))
		HS_FATAL("loadgen: port %u or %u does not exist; give a NIC or "
			 "a --vdev\n", lg.tx_port, lg.rx_port);
	lg.pool = hs_pool_create("lg_pool", hs_cfg.nb_mbufs);
	if (lg.pool == NULL)
		HS_FATAL("loadgen: cannot create mbuf pool of %u mbufs: %s\n",
			 hs_cfg.nb_mbufs, rte_strerror(rte_errno));
	if (hs_port_init(lg.tx_port, lg.pool, hs_cfg.rxd, hs_cfg.txd) != 0)
		HS_FATAL("loadgen: cannot initialise port %u\n", lg.tx_port);
	if (lg.rx_port != lg.tx_port &&
	    hs_port_init(lg.rx_port, lg.pool, hs_cfg.rxd, hs_cfg.txd) != 0)
		HS_FATAL("loadgen: cannot initialise port %u\n", lg.rx_port);
	mask = (1u << lg.tx_port) | (1u << lg.rx_port);
	if (hs_wait_links(mask, hs_cfg.link_timeout_ms) != 0)
		HS_FATAL("loadgen: link down after %u ms (is the peer "
			 "running?)\n", hs_cfg.link_timeout_ms);
	memset(&zero, 0, sizeof(zero));
	if (rte_is_same_ether_addr(&lg.src.src_mac, &zero))
		rte_eth_macaddr_get(lg.tx_port, &lg.src.src_mac);
	if (lg.line_bps == 0) {
		memset(&link, 0, sizeof(link));
		rte_eth_link_get_nowait(lg.tx_port, &link);
		lg.line_bps = (link.link_speed != RTE_ETH_SPEED_NUM_NONE &&
			       link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN) ?
			link.link_speed * 1e6 : 10e9;
	}
}

int
main(int argc, char **argv)
{
	static struct lg_trial curve[LG_MAX_CURVE];
	struct lg_trial single, *shown = &single;
	double pps, res_pps = 0, wall_s;
	uint64_t start;
	uint32_t nb_trials = 0;
	int ret, best = -1;

	lg_defaults();
	hs_config_defaults(&hs_cfg);
	hs_signals_install();
	ret = rte_eal_init(argc, argv);
	if (ret < 0)
		HS_FATAL("loadgen: EAL initialisation failed: %s\n",
			 rte_strerror(rte_errno));
	argc -= ret;
	argv += ret;
	if (lg_parse_args(argc, argv) < 0)
		HS_FATAL("loadgen: invalid arguments\n");
	if (!lg.rx_port_set)
		lg.rx_port = lg.tx_port;
	if (hs_cfg.run_time_s > 0)
		lg.duration_s = hs_cfg.run_time_s;
	lg.src.rng = lg.seed * 0x9E3779B97F4A7C15ULL + 1;
	if (lg.pcap != NULL) {
		if (lg_source_trace_load(&lg.src, lg.pcap, lg.pcap_max) < 0)
			HS_FATAL("loadgen: cannot load --pcap %s\n", lg.pcap);
		lg.src.trace_timing = !lg.rate_set;
	} else if (lg_source_synthetic_init(&lg.src) < 0) {
		HS_FATAL("loadgen: bad traffic description\n");
	}
	lg.win = calloc(LG_WINDOW, sizeof(*lg.win));
	if (lg.win == NULL)
		HS_FATAL("loadgen: cannot allocate the sequence window\n");
	lg_setup_ports();

	pps = lg.src.trace_timing ? 0 : lg_rate_pps(&lg, &lg.rate);
	printf("loadgen: port %u -> port %u, line %.4g bps, mean frame %.1f B, "
	       "rate %.6g pps%s\n", lg.tx_port, lg.rx_port, lg.line_bps,
	       lg_source_mean_size(&lg.src), pps,
	       lg.src.trace_timing ? " (trace timing)" : "");
	fflush(stdout);
	start = rte_rdtsc();
	if (lg.msb) {
		if (pps <= 0)
			HS_FATAL("loadgen: --msb needs a rate (--rate)\n");
		res_pps = lg_rate_pps(&lg, &lg.msb_resolution);
		if (lg.msb_resolution.unit == LG_RATE_PCT)
			res_pps = pps * lg.msb_resolution.value / 100;
		best = lg_run_msb(&lg, pps, res_pps, curve, &nb_trials);
		shown = best >= 0 ? &curve[best] :
			(nb_trials ? &curve[nb_trials - 1] : &single);
		if (nb_trials == 0)
			memset(&single, 0, sizeof(single));
	} else {
		lg_run_trial(&lg, pps, &single);
	}
	wall_s = (double)(rte_rdtsc() - start) / rte_get_tsc_hz();

	printf("\n---- loadgen final counters%s ----\n",
	       lg.msb ? " (MSB trial)" : "");
	lg_print_trial(shown);
	if (lg.msb)
		printf("  MSB: %.6g bps (%.6g pps) at drop threshold %.4f after "
		       "%u trials\n", best >= 0 ? curve[best].offered_bps : 0.0,
		       best >= 0 ? curve[best].offered_pps : 0.0,
		       lg.msb_threshold, nb_trials);
	hs_print_cycles(stdout, &lg.cyc);
	fflush(stdout);
	if (hs_cfg.json_path != NULL &&
	    lg_write_json(shown, curve, nb_trials, best, res_pps, wall_s) < 0)
		ret = 1;
	else
		ret = 0;
	if (lg.peer_exit_wait_ms > 0) {
		printf("loadgen: waiting up to %u ms for the peer to leave\n",
		       lg.peer_exit_wait_ms);
		fflush(stdout);
		if (hs_wait_links_down((1u << lg.tx_port) | (1u << lg.rx_port),
				       lg.peer_exit_wait_ms) < 0)
			printf("loadgen: the peer is still up; closing anyway\n");
	}
	hs_ports_close((1u << lg.tx_port) | (1u << lg.rx_port));
	rte_eal_cleanup();
	return ret;
}
