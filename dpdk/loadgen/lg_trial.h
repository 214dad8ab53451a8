/* SPDX-License-Identifier: BSD-3-Clause
 *
 * One load-generator trial (send at a rate for a time, drain, count) and
 * the bandwidth test built from trials.
 */

#ifndef _LG_TRIAL_H_
#define _LG_TRIAL_H_

#include <stdbool.h>
#include <stdint.h>

#include "hs_common.h"
#include "lg_hist.h"
#include "lg_source.h"
#include "lg_track.h"

#define LG_MAX_CURVE 64

enum lg_rate_unit { LG_RATE_BPS, LG_RATE_PPS, LG_RATE_PCT };

struct lg_rate {
	enum lg_rate_unit unit;
	double value;
};

struct lg_trial {
	double target_pps;
	double target_bps;
	double duration_s;
	uint64_t tx_packets;
	uint64_t tx_bytes;		/* frame bytes incl. FCS */
	uint64_t rx_packets;		/* unique measured arrivals */
	uint64_t rx_bytes;
	uint64_t lost_packets;
	uint64_t reordered_packets;
	uint64_t duplicate_packets;
	uint64_t unmatched_packets;	/* untagged, warm-up, late or unknown */
	uint64_t tx_refused;
	double drop_rate;
	double offered_bps, offered_pps, achieved_bps, achieved_pps;
	uint64_t lat_count, lat_min, lat_p50, lat_p90, lat_p99, lat_p999;
	uint64_t lat_max;
	double lat_mean, lat_std;
};

/* Options and run state of the load generator. */
struct lg_ctx {
	uint16_t tx_port, rx_port;
	bool rx_port_set;
	struct lg_rate rate;
	bool rate_set;
	double duration_s, warmup_s, drain_s;
	/* after the results, wait this long for the peer to leave (ms) */
	uint32_t peer_exit_wait_ms;
	const char *pcap;
	uint32_t loops, pcap_max;
	uint64_t seed;
	double line_bps;
	bool msb;
	double msb_threshold;
	struct lg_rate msb_resolution;
	uint32_t msb_max_trials;
	bool tx_retry;
	bool histogram;
	struct lg_source src;
	struct rte_mempool *pool;
	struct lg_slot *win;
	uint32_t next_seq;
	struct lg_hist hist;
	struct hs_lcore_stats cyc;
};

/* Turn a rate into packets per second for the source's mean frame size. */
double lg_rate_pps(const struct lg_ctx *c, const struct lg_rate *r);
/* Run one trial at pps (0 = trace timing); false if interrupted early. */
bool lg_run_trial(struct lg_ctx *c, double pps, struct lg_trial *t);
/* Bandwidth test: fills curve[] and returns the index of the MSB trial,
 * or -1 when no trial met the threshold. */
int lg_run_msb(struct lg_ctx *c, double max_pps, double resolution_pps,
	       struct lg_trial *curve, uint32_t *nb_trials);

#endif /* _LG_TRIAL_H_ */
