/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The receive-process-transmit skeleton shared by touchfwd, touchdrop, rxptx
 * and kvs. Like testpmd's forwarding engines, a benchmark is a small
 * struct hs_engine whose fwd() callback turns one received burst into the
 * packets to transmit; everything else (options, ports, lcores, counters,
 * the cycles-per-packet report, JSON) lives here.
 */

#ifndef _HS_FWD_H_
#define _HS_FWD_H_

#include <getopt.h>
#include <stdio.h>

#include "hs_common.h"

struct hs_engine {
	const char *name;
	const char *summary;
	/* Engine options (terminated by a zeroed entry), may be NULL. */
	const struct option *options;
	void (*usage)(FILE *f);
	/* Return 1 if the option was consumed, -1 on a bad value. */
	int (*parse_opt)(int opt, const char *arg);
	/* Called once after the mempool exists; non-zero aborts start-up. */
	int (*init)(struct rte_mempool *pool);
	/*
	 * Process nb_rx received packets. Every packet must end up either
	 * in tx[] (at most tx_cap entries, returned count) or freed by the
	 * engine (counted in st->app_dropped).
	 */
	uint16_t (*fwd)(unsigned int lcore_id, struct hs_lcore_stats *st,
			struct rte_mbuf **rx, uint16_t nb_rx,
			struct rte_mbuf **tx, uint16_t tx_cap);
	void (*print)(FILE *f);
	void (*json)(struct hs_json *js);
};

/* Runs the whole program; returns the process exit status. */
int hs_fwd_main(int argc, char **argv, const struct hs_engine *eng);

#endif /* _HS_FWD_H_ */
