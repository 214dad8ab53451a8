/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Packet helpers shared by the engines: MAC swap, reading every byte of a
 * frame, and the hostsim measurement tag. The tag is the simulator's: 16
 * bytes, all big-endian, at offset 42 for Ethernet/IPv4/UDP:
 *
 *   u16 magic 0x4853 ("HS") | u16 flow id | u32 sequence | u64 tx time (ns)
 */

#ifndef _HS_PKT_H_
#define _HS_PKT_H_

#include <stdint.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#define HS_TAG_MAGIC		0x4853
#define HS_TAG_LEN		16
#define HS_TAG_DEFAULT_OFFSET	42	/* 14 Ethernet + 20 IPv4 + 8 UDP */
#define HS_FCS_LEN		4	/* counted in frame bits, not in mbufs */
#define HS_WIRE_OVERHEAD	20	/* preamble + SFD + inter-frame gap */

struct hs_tag {
	rte_be16_t magic;
	rte_be16_t flow;
	rte_be32_t seq;
	rte_be64_t tx_ns;
} __rte_packed;

static inline void
hs_macswap(struct rte_mbuf *m)
{
	struct rte_ether_hdr *eth;
	struct rte_ether_addr tmp;

	if (unlikely(rte_pktmbuf_data_len(m) < sizeof(*eth)))
		return;
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	rte_ether_addr_copy(&eth->src_addr, &tmp);
	rte_ether_addr_copy(&eth->dst_addr, &eth->src_addr);
	rte_ether_addr_copy(&tmp, &eth->dst_addr);
}

/*
 * Read every byte of every segment. The sum is returned so the compiler
 * cannot drop the loads; callers accumulate it into a counter.
 */
static inline uint64_t
hs_touch(const struct rte_mbuf *m)
{
	uint64_t sum = 0;

	for (; m != NULL; m = m->next) {
		const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
		uint16_t len = rte_pktmbuf_data_len(m), i;

		for (i = 0; i < len; i++)
			sum += p[i];
	}
	return sum;
}

#endif /* _HS_PKT_H_ */
