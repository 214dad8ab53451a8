/* SPDX-License-Identifier: BSD-3-Clause
 *
 * touchdrop: read every byte of each received frame, then free it (the
 * TouchDrop benchmark). Every received frame is counted in app_dropped.
 */

#include <rte_lcore.h>

#include "hs_fwd.h"
#include "hs_pkt.h"

static uint64_t touch_sum[RTE_MAX_LCORE];

static uint16_t
touchdrop_fwd(unsigned int lcore_id, struct hs_lcore_stats *st,
	      struct rte_mbuf **rx, uint16_t nb_rx,
	      __rte_unused struct rte_mbuf **tx, __rte_unused uint16_t tx_cap)
{
	uint64_t sum = 0;
	uint16_t i;

	for (i = 0; i < nb_rx; i++)
		sum += hs_touch(rx[i]);
	rte_pktmbuf_free_bulk(rx, nb_rx);
	touch_sum[lcore_id] += sum;
	st->app_dropped += nb_rx;
	return 0;
}

static void
touchdrop_json(struct hs_json *js)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < RTE_MAX_LCORE; i++)
		sum += touch_sum[i];
	hs_json_obj_open(js, "touchdrop");
	hs_json_u64(js, "byte_sum", sum);
	hs_json_obj_close(js);
}

static const struct hs_engine touchdrop_engine = {
	.name = "touchdrop",
	.summary = "read every byte of each frame, then free it",
	.fwd = touchdrop_fwd,
	.json = touchdrop_json,
};

int
main(int argc, char **argv)
{
	return hs_fwd_main(argc, argv, &touchdrop_engine);
}
