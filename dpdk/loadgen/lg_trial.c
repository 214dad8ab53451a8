/* SPDX-License-Identifier: BSD-3-Clause */

#include <math.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "hs_pkt.h"
#include "lg_trial.h"

/* Per-trial receive bookkeeping. */
struct lg_rx_state {
	uint32_t first_seq;		/* first measured sequence number */
	uint32_t end_seq;		/* one past the last one sent */
	bool measuring;
	bool any;
	uint32_t max_seq;
};

double
lg_rate_pps(const struct lg_ctx *c, const struct lg_rate *r)
{
	double mean = lg_source_mean_size(&c->src);

	switch (r->unit) {
	case LG_RATE_BPS:
		return r->value / (mean * 8);
	case LG_RATE_PPS:
		return r->value;
	case LG_RATE_PCT:
	default:
		return r->value / 100 * c->line_bps /
			((mean + HS_WIRE_OVERHEAD) * 8);
	}
}

/* Sequence a is before b in the trial, modulo 2^32. */
static inline bool
lg_seq_in(uint32_t seq, uint32_t first, uint32_t end)
{
	return (uint32_t)(seq - first) < (uint32_t)(end - first);
}

static void
lg_rx_one(struct lg_ctx *c, struct lg_rx_state *rs, struct lg_trial *t,
	  struct rte_mbuf *m, uint64_t now)
{
	const struct hs_tag *tag;
	uint64_t tx_tsc;
	uint32_t seq;

	if (!c->src.tag) {
		/* untagged traffic: count arrivals, nothing to match */
		if (rs->measuring) {
			t->rx_packets++;
			t->rx_bytes += rte_pktmbuf_pkt_len(m) + HS_FCS_LEN;
		} else {
			t->unmatched_packets++;
		}
		return;
	}
	if (rte_pktmbuf_data_len(m) < c->src.tag_off + HS_TAG_LEN) {
		t->unmatched_packets++;
		return;
	}
	tag = rte_pktmbuf_mtod_offset(m, const struct hs_tag *,
				      c->src.tag_off);
	seq = rte_be_to_cpu_32(tag->seq);
	if (tag->magic != rte_cpu_to_be_16(HS_TAG_MAGIC) || !rs->measuring ||
	    !lg_seq_in(seq, rs->first_seq, rs->end_seq)) {
		t->unmatched_packets++;
		return;
	}
	switch (lg_track_received(c->win, seq, &tx_tsc)) {
	case LG_MATCH_NEW:
		t->rx_packets++;
		t->rx_bytes += rte_pktmbuf_pkt_len(m) + HS_FCS_LEN;
		lg_hist_add(&c->hist, (uint64_t)hs_tsc_to_ns(now - tx_tsc));
		if (rs->any && (int32_t)(seq - rs->max_seq) < 0)
			t->reordered_packets++;
		else
			rs->max_seq = seq;
		rs->any = true;
		break;
	case LG_MATCH_DUP:
		t->duplicate_packets++;
		break;
	default:
		t->unmatched_packets++;
		break;
	}
}

static uint16_t
lg_poll_rx(struct lg_ctx *c, struct lg_rx_state *rs, struct lg_trial *t)
{
	struct rte_mbuf *pkts[HS_MAX_BURST];
	uint64_t now;
	uint16_t n, i;

	n = rte_eth_rx_burst(c->rx_port, 0, pkts, hs_cfg.burst);
	if (n == 0)
		return 0;
	now = rte_rdtsc();
	for (i = 0; i < n; i++)
		lg_rx_one(c, rs, t, pkts[i], now);
	rte_pktmbuf_free_bulk(pkts, n);
	return n;
}

static void
lg_account(struct lg_ctx *c, uint64_t t0, uint64_t t1, uint32_t work)
{
	if (work != 0) {
		c->cyc.busy_polls++;
		c->cyc.busy_cycles += t1 - t0;
		c->cyc.rx_packets += work;
	} else {
		c->cyc.idle_polls++;
		c->cyc.idle_cycles += t1 - t0;
	}
}

static void
lg_finish_trial(struct lg_ctx *c, struct lg_trial *t, double pps)
{
	const struct lg_hist *h = &c->hist;
	double mean = lg_source_mean_size(&c->src);

	t->target_pps = pps;
	t->target_bps = pps * mean * 8;
	t->lost_packets = t->tx_packets > t->rx_packets ?
		t->tx_packets - t->rx_packets : 0;
	t->drop_rate = t->tx_packets ?
		(double)t->lost_packets / (double)t->tx_packets : 0.0;
	if (t->duration_s > 0) {
		t->offered_pps = t->tx_packets / t->duration_s;
		t->offered_bps = t->tx_bytes * 8.0 / t->duration_s;
		t->achieved_pps = t->rx_packets / t->duration_s;
		t->achieved_bps = t->rx_bytes * 8.0 / t->duration_s;
	}
	t->lat_count = h->count;
	t->lat_min = h->count ? h->min : 0;
	t->lat_mean = lg_hist_mean(h);
	t->lat_p50 = lg_hist_quantile(h, 0.50);
	t->lat_p90 = lg_hist_quantile(h, 0.90);
	t->lat_p99 = lg_hist_quantile(h, 0.99);
	t->lat_p999 = lg_hist_quantile(h, 0.999);
	t->lat_max = h->max;
	t->lat_std = lg_hist_std(h);
}

/* Transmit n built frames; refused ones are lost or kept for a retry. */
static uint16_t
lg_send(struct lg_ctx *c, struct lg_trial *t, struct rte_mbuf **pkts,
	uint16_t n, bool measuring)
{
	uint16_t sent, i, left;

	sent = rte_eth_tx_burst(c->tx_port, 0, pkts, n);
	left = n - sent;
	if (left != 0 && !c->tx_retry) {
		if (measuring) {
			t->tx_refused += left;
			for (i = sent; i < n; i++)
				t->tx_bytes += pkts[i]->pkt_len + HS_FCS_LEN;
			t->tx_packets += left;
		}
		rte_pktmbuf_free_bulk(&pkts[sent], left);
		left = 0;
	}
	if (measuring) {
		for (i = 0; i < sent; i++)
			t->tx_bytes += pkts[i]->pkt_len + HS_FCS_LEN;
		t->tx_packets += sent;
	}
	if (left != 0)
		memmove(pkts, pkts + sent, left * sizeof(*pkts));
	return left;
}

bool
lg_run_trial(struct lg_ctx *c, double pps, struct lg_trial *t)
{
	struct rte_mbuf *pkts[HS_MAX_BURST];
	struct lg_rx_state rs;
	uint64_t hz = rte_get_tsc_hz();
	uint64_t start, now, t0, measure_tsc, end_tsc, drain_end, meas_start = 0;
	double next, gap;
	uint32_t frame_bytes, work;
	uint16_t n = 0, pending = 0;
	bool more = true;

	memset(t, 0, sizeof(*t));
	memset(&rs, 0, sizeof(rs));
	lg_hist_reset(&c->hist);
	c->src.pps = pps;
	if (c->src.trace != NULL)
		lg_source_rewind(&c->src, c->loops);

	start = rte_rdtsc();
	measure_tsc = start + (uint64_t)(c->warmup_s * hz);
	end_tsc = measure_tsc + (uint64_t)(c->duration_s * hz);
	next = (double)start;
	now = start;
	t0 = start;
	while (!hs_force_quit && now < end_tsc && (more || pending)) {
		n = pending;
		while (more && n < hs_cfg.burst && next <= (double)now) {
			struct rte_mbuf *m = rte_pktmbuf_alloc(c->pool);

			if (m == NULL)
				break;
			if (!rs.measuring && now >= measure_tsc) {
				rs.measuring = true;
				rs.first_seq = c->next_seq;
				meas_start = now;
			}
			if (!lg_source_next(&c->src, m, c->next_seq,
					    (uint64_t)hs_tsc_to_ns(now),
					    &frame_bytes)) {
				rte_pktmbuf_free(m);
				more = false;
				break;
			}
			lg_track_sent(c->win, c->next_seq, now);
			c->next_seq++;
			rs.end_seq = c->next_seq;
			pkts[n++] = m;
			gap = lg_source_gap_ns(&c->src) * hz / 1e9;
			next += gap;
		}
		work = n;
		pending = n ? lg_send(c, t, pkts, n, rs.measuring) : 0;
		work += lg_poll_rx(c, &rs, t);
		now = rte_rdtsc();
		lg_account(c, t0, now, work);
		t0 = now;
	}
	if (pending)
		rte_pktmbuf_free_bulk(pkts, pending);
	if (rs.measuring)
		t->duration_s = (double)(now - meas_start) / hz;

	drain_end = now + (uint64_t)(c->drain_s * hz);
	while (!hs_force_quit && now < drain_end) {
		work = lg_poll_rx(c, &rs, t);
		now = rte_rdtsc();
		lg_account(c, t0, now, work);
		t0 = now;
	}
	lg_finish_trial(c, t, pps);
	return !hs_force_quit;
}

static bool
lg_trial_passes(const struct lg_ctx *c, const struct lg_trial *t)
{
	return t->tx_packets > 0 && t->drop_rate <= c->msb_threshold;
}

int
lg_run_msb(struct lg_ctx *c, double max_pps, double resolution_pps,
	   struct lg_trial *curve, uint32_t *nb_trials)
{
	double lo = 0, hi = max_pps, mid;
	int best = -1;
	uint32_t n = 0;

	/* First the highest rate; if it passes there is nothing to search. */
	mid = hi;
	while (n < c->msb_max_trials && !hs_force_quit) {
		struct lg_trial *t = &curve[n];

		lg_run_trial(c, mid, t);
		printf("msb trial %u: offered %.4g bps (%.4g pps), achieved "
		       "%.4g bps, drop rate %.5f -> %s\n", n + 1,
		       t->offered_bps, t->offered_pps, t->achieved_bps,
		       t->drop_rate, lg_trial_passes(c, t) ? "pass" : "fail");
		fflush(stdout);
		n++;
		if (lg_trial_passes(c, t)) {
			if (best < 0 || t->offered_bps > curve[best].offered_bps)
				best = (int)n - 1;
			lo = mid;
			if (mid >= max_pps)
				break;
		} else {
			hi = mid;
		}
		if (hi - lo <= resolution_pps)
			break;
		mid = (lo + hi) / 2;
	}
	*nb_trials = n;
	return best;
}
