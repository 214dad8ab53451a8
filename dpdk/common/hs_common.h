/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Shared pieces of the hostsim DPDK programs: common options, port set-up,
 * the stop flag, per-lcore counters with the cycles-per-packet report, and
 * the JSON result writer. Every program follows the order of DPDK's
 * examples/l2fwd: EAL init, arguments, mempool, ports, link check, lcores.
 */

#ifndef _HS_COMMON_H_
#define _HS_COMMON_H_

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_common.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "hs_json.h"

#define HS_MAX_PORTS		RTE_MAX_ETHPORTS
#define HS_MAX_BURST		512
#define HS_DEFAULT_BURST	32
#define HS_DEFAULT_RXD		1024
#define HS_DEFAULT_TXD		1024
#define HS_DEFAULT_MBUFS	8191
#define HS_MBUF_CACHE		256

/* Options every program accepts (named like testpmd's). */
struct hs_config {
	uint32_t portmask;		/* -p/--portmask, hex */
	uint16_t burst;			/* --burst, packets per rx/tx call */
	uint16_t rxd;			/* --rxd, RX descriptors per queue */
	uint16_t txd;			/* --txd, TX descriptors per queue */
	uint32_t nb_mbufs;		/* --total-num-mbufs */
	double run_time_s;		/* --run-time, 0 = until a signal */
	double stats_period_s;		/* --stats-period, 0 = off */
	uint32_t link_timeout_ms;	/* --link-timeout */
	const char *json_path;		/* --json FILE */
	bool paired;			/* --port-topology=paired|loop */
};

/* Per-lcore counters; one cache line apart to avoid false sharing. */
struct hs_lcore_stats {
	uint64_t rx_packets;
	uint64_t rx_bytes;
	uint64_t tx_packets;
	uint64_t tx_bytes;
	uint64_t tx_dropped;		/* refused by the TX queue and freed */
	uint64_t app_dropped;		/* dropped on purpose by the engine */
	uint64_t busy_polls;		/* loop iterations that received work */
	uint64_t idle_polls;
	uint64_t busy_cycles;		/* TSC cycles spent in busy iterations */
	uint64_t idle_cycles;
} __rte_cache_aligned;

extern volatile bool hs_force_quit;
extern struct hs_config hs_cfg;

/* Signal handling: SIGINT/SIGTERM set hs_force_quit. */
void hs_signals_install(void);

/* Common options: returns 1 if consumed, 0 if not ours, -1 on bad value. */
int hs_parse_common(int opt, const char *arg);
void hs_config_defaults(struct hs_config *cfg);
void hs_usage_common(FILE *f);
extern const struct option hs_common_options[];
#define HS_OPT_COMMON_BASE 1000
#define HS_COMMON_SHORTOPTS "p:"

/* Ports and memory. */
struct rte_mempool *hs_pool_create(const char *name, uint32_t n);
int hs_port_init(uint16_t port, struct rte_mempool *pool, uint16_t rxd,
		 uint16_t txd);
int hs_wait_links(uint32_t portmask, uint32_t timeout_ms);
int hs_wait_links_down(uint32_t portmask, uint32_t timeout_ms);
void hs_ports_close(uint32_t portmask);
uint32_t hs_portmask_valid(uint32_t portmask);

/* Numbers. */
int hs_parse_u64(const char *s, uint64_t *v);
int hs_parse_double(const char *s, double *v);
/* An integer option in [lo, hi]; an error naming --name otherwise. */
int hs_parse_range(const char *name, const char *arg, uint64_t lo, uint64_t hi,
		   uint64_t *v);
uint64_t hs_ns_to_tsc(uint64_t ns);
double hs_tsc_to_ns(uint64_t cycles);

/* Reporting. */
void hs_stats_sum(const struct hs_lcore_stats *per_lcore,
		  struct hs_lcore_stats *total);
void hs_json_cycles(struct hs_json *js, const struct hs_lcore_stats *total);
void hs_json_ports(struct hs_json *js, uint32_t portmask);
void hs_print_cycles(FILE *f, const struct hs_lcore_stats *total);
FILE *hs_json_open(const char *path);

/* Fatal initialisation error: print and exit non-zero after EAL cleanup. */
#define HS_FATAL(...) rte_exit(EXIT_FAILURE, __VA_ARGS__)

#endif /* _HS_COMMON_H_ */
