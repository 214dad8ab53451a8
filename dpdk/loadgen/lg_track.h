/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Matching of returning frames to transmitted ones by sequence number.
 * A power-of-two window remembers, for each of the last LG_WINDOW sequence
 * numbers, its transmit TSC and whether it came back, so drops, duplicates
 * and reordering are all told apart without trusting arrival order.
 */

#ifndef _LG_TRACK_H_
#define _LG_TRACK_H_

#include <stdint.h>
#include <stdlib.h>

#define LG_WINDOW	(1u << 20)

enum { LG_SLOT_FREE = 0, LG_SLOT_SENT, LG_SLOT_RECEIVED };

struct lg_slot {
	uint32_t seq;
	uint32_t state;
	uint64_t tx_tsc;
};

enum lg_match {
	LG_MATCH_NEW,		/* first arrival of a sent sequence number */
	LG_MATCH_DUP,		/* already received */
	LG_MATCH_UNKNOWN,	/* never sent, or older than the window */
};

static inline void
lg_track_sent(struct lg_slot *win, uint32_t seq, uint64_t tsc)
{
	struct lg_slot *s = &win[seq & (LG_WINDOW - 1)];

	s->seq = seq;
	s->state = LG_SLOT_SENT;
	s->tx_tsc = tsc;
}

static inline enum lg_match
lg_track_received(struct lg_slot *win, uint32_t seq, uint64_t *tx_tsc)
{
	struct lg_slot *s = &win[seq & (LG_WINDOW - 1)];

	if (s->seq != seq || s->state == LG_SLOT_FREE)
		return LG_MATCH_UNKNOWN;
	if (s->state == LG_SLOT_RECEIVED)
		return LG_MATCH_DUP;
	s->state = LG_SLOT_RECEIVED;
	*tx_tsc = s->tx_tsc;
	return LG_MATCH_NEW;
}

#endif /* _LG_TRACK_H_ */
