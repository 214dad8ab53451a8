/* SPDX-License-Identifier: BSD-3-Clause
 *
 * touchfwd: read every byte of each received frame, swap the Ethernet
 * addresses and transmit it (the TouchFwd benchmark).
 */

#include <rte_lcore.h>

#include "hs_fwd.h"
#include "hs_pkt.h"

static uint64_t touch_sum[RTE_MAX_LCORE];

static uint16_t
touchfwd_fwd(unsigned int lcore_id, __rte_unused struct hs_lcore_stats *st,
	     struct rte_mbuf **rx, uint16_t nb_rx, struct rte_mbuf **tx,
	     __rte_unused uint16_t tx_cap)
{
	uint64_t sum = 0;
	uint16_t i;

	for (i = 0; i < nb_rx; i++) {
		sum += hs_touch(rx[i]);
		hs_macswap(rx[i]);
		tx[i] = rx[i];
	}
	touch_sum[lcore_id] += sum;
	return nb_rx;
}

static void
touchfwd_json(struct hs_json *js)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < RTE_MAX_LCORE; i++)
		sum += touch_sum[i];
	hs_json_obj_open(js, "touchfwd");
	hs_json_u64(js, "byte_sum", sum);
	hs_json_obj_close(js);
}

static const struct hs_engine touchfwd_engine = {
	.name = "touchfwd",
	.summary = "read every byte of each frame, swap MACs, forward",
	.fwd = touchfwd_fwd,
	.json = touchfwd_json,
};

int
main(int argc, char **argv)
{
	return hs_fwd_main(argc, argv, &touchfwd_engine);
}
