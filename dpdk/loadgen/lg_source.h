/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Traffic sources of the load generator: synthetic Ethernet/IPv4/UDP
 * frames (fixed size or IMIX 64/594/1518 at 7:4:1, N flows by UDP source
 * port, constant or Poisson inter-arrival) and pcap replay (the trace's own
 * timestamps, optionally scaled, or a rate override). Sizes are Ethernet
 * frame sizes including the 4-byte FCS, which the NIC adds on the wire.
 */

#ifndef _LG_SOURCE_H_
#define _LG_SOURCE_H_

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#define LG_MAX_FRAME	9018
#define LG_MAX_SIZES	16

enum lg_dist { LG_DIST_CONST, LG_DIST_POISSON };

struct lg_trace_frame {
	uint16_t len;			/* captured bytes (no FCS) */
	uint64_t ts_ns;			/* capture time from the first frame */
	uint8_t *data;
};

struct lg_source {
	/* synthetic */
	uint16_t sizes[LG_MAX_SIZES];	/* frame sizes incl. FCS */
	uint16_t weights[LG_MAX_SIZES];
	uint16_t nb_sizes;
	uint32_t weight_total;
	uint32_t flows;
	uint16_t sport_base;
	uint16_t dport;
	struct rte_ether_addr src_mac, dst_mac;
	uint32_t src_ip, dst_ip;	/* host order */
	uint8_t *tmpl[LG_MAX_SIZES];	/* one template frame per size */
	/* trace */
	struct lg_trace_frame *trace;
	uint32_t trace_len;
	uint32_t trace_pos;
	uint32_t loops_left;		/* passes still to play, 0 = forever */
	bool trace_loop_forever;
	bool rewrite_dst_mac;
	double trace_speed;		/* timestamp scale: 2 = twice as fast */
	bool trace_timing;		/* honour timestamps (no --rate given) */
	/* pacing */
	enum lg_dist dist;
	double pps;
	uint64_t rng;
	uint32_t next_flow;
	/* tagging */
	bool tag;
	uint16_t tag_off;
};

int lg_source_synthetic_init(struct lg_source *s);
int lg_source_trace_load(struct lg_source *s, const char *path,
			 uint32_t max_frames);
/* Mean frame size including FCS, used to turn bps into pps. */
double lg_source_mean_size(const struct lg_source *s);
/* Fill m with the next frame; returns false when the trace has ended. */
bool lg_source_next(struct lg_source *s, struct rte_mbuf *m, uint32_t seq,
		    uint64_t tx_ns, uint32_t *frame_bytes);
/* Gap in ns before the frame that follows the one just built. */
double lg_source_gap_ns(struct lg_source *s);
void lg_source_rewind(struct lg_source *s, uint32_t loops);
uint64_t lg_rand(uint64_t *state);

#endif /* _LG_SOURCE_H_ */
