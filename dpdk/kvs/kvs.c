/* SPDX-License-Identifier: BSD-3-Clause
 *
 * kvs: a memcached-compatible key-value store on DPDK (MemcachedDPDK).
 * Ethernet/IPv4/UDP frames to --udp-port carry the memcached UDP frame
 * header and ASCII commands; the first response datagram is written in
 * place over the request (MACs, IPs and ports swapped, lengths and
 * checksums fixed), further datagrams of a multi-datagram answer are new
 * mbufs. Malformed frames are counted and dropped; malformed commands are
 * answered with memcached's error strings.
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_udp.h>

#include "hs_fwd.h"
#include "hs_pkt.h"
#include "kvs_proto.h"

#define KVS_HDRS_LEN	(sizeof(struct rte_ether_hdr) + \
			 sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr))

enum {
	OPT_UDP_PORT = 2000,
	OPT_ENTRIES,
	OPT_MAX_VALUE,
};

/* Why frames were dropped before reaching the protocol. */
struct kvs_drops {
	uint64_t truncated;		/* shorter than its headers say */
	uint64_t not_ipv4;		/* EtherType is not IPv4 */
	uint64_t bad_ip_header;		/* version, IHL or total length */
	uint64_t bad_ip_checksum;
	uint64_t ip_fragment;
	uint64_t not_udp;
	uint64_t wrong_port;
	uint64_t bad_udp_length;
	uint64_t bad_udp_checksum;
	uint64_t bad_mc_header;		/* UDP payload shorter than 8 bytes */
	uint64_t multi_datagram;	/* request split over datagrams */
	uint64_t multi_segment;		/* chained mbufs are not parsed */
	uint64_t no_reply;		/* valid request, nothing to answer */
	uint64_t tx_alloc_fail;		/* no mbuf for an extra datagram */
	uint64_t tx_cap;		/* more datagrams than the burst holds */
} __rte_cache_aligned;

static uint16_t udp_port = 11211;
static uint64_t entries = 65536;
static uint64_t max_value = 1024;
static struct rte_mempool *kvs_pool;
static struct kvs_table table;
static struct kvs_counters counters[RTE_MAX_LCORE];
static struct kvs_drops drops[RTE_MAX_LCORE];
static struct kvs_out *outs[RTE_MAX_LCORE];

static const struct option kvs_options[] = {
	{ "udp-port", required_argument, NULL, OPT_UDP_PORT },
	{ "entries", required_argument, NULL, OPT_ENTRIES },
	{ "max-value", required_argument, NULL, OPT_MAX_VALUE },
	{ NULL, 0, NULL, 0 },
};

static void
kvs_usage(FILE *f)
{
	fprintf(f,
		"  --udp-port=N            memcached UDP port (default 11211)\n"
		"  --entries=N             hash table slots, rounded up to a power\n"
		"                          of two (default 65536)\n"
		"  --max-value=BYTES       largest value accepted (default 1024);\n"
		"                          larger sets get SERVER_ERROR object too\n"
		"                          large for cache\n");
}

static int
kvs_parse(int opt, const char *arg)
{
	uint64_t v;

	switch (opt) {
	case OPT_UDP_PORT:
		if (hs_parse_u64(arg, &v) < 0 || v == 0 || v > 65535) {
			fprintf(stderr, "invalid --udp-port '%s': expected "
				"1..65535\n", arg);
			return -1;
		}
		udp_port = (uint16_t)v;
		return 1;
	case OPT_ENTRIES:
		if (hs_parse_u64(arg, &entries) < 0 || entries < 1 ||
		    entries > (1u << 26)) {
			fprintf(stderr, "invalid --entries '%s': expected "
				"1..67108864\n", arg);
			return -1;
		}
		return 1;
	case OPT_MAX_VALUE:
		if (hs_parse_u64(arg, &max_value) < 0 ||
		    max_value > (1u << 20)) {
			fprintf(stderr, "invalid --max-value '%s': expected "
				"0..1048576 bytes\n", arg);
			return -1;
		}
		return 1;
	default:
		return 0;
	}
}

static int
kvs_init(struct rte_mempool *pool)
{
	unsigned int lcore;

	kvs_pool = pool;
	if ((uint64_t)entries * max_value > (8ull << 30)) {
		fprintf(stderr, "kvs: --entries x --max-value exceeds 8 GiB\n");
		return -1;
	}
	if (kvs_table_init(&table, (uint32_t)entries, (uint32_t)max_value)) {
		fprintf(stderr, "kvs: cannot allocate %" PRIu64 " entries of "
			"%" PRIu64 " bytes\n", entries, max_value);
		return -1;
	}
	RTE_LCORE_FOREACH(lcore) {
		outs[lcore] = malloc(sizeof(struct kvs_out));
		if (outs[lcore] == NULL)
			return -1;
	}
	printf("kvs: UDP port %u, %u slots, values up to %" PRIu64 " bytes\n",
	       udp_port, table.nb_slots, max_value);
	return 0;
}

/*
 * Validate Ethernet/IPv4/UDP/memcached headers. Returns the memcached
 * payload (frame header included) and its length, or NULL after counting
 * the reason in d.
 */
static const uint8_t *
kvs_parse_frame(struct rte_mbuf *m, struct kvs_drops *d, uint32_t *plen)
{
	uint32_t len = rte_pktmbuf_data_len(m);
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct rte_ether_hdr *eth = (const void *)p;
	const struct rte_ipv4_hdr *ip;
	const struct rte_udp_hdr *udp;
	uint32_t ihl, tot, ulen;
	const uint8_t *mc;

	if (m->nb_segs != 1) {
		d->multi_segment++;
		return NULL;
	}
	if (len < sizeof(*eth)) {
		d->truncated++;
		return NULL;
	}
	if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
		d->not_ipv4++;
		return NULL;
	}
	if (len < sizeof(*eth) + sizeof(*ip)) {
		d->truncated++;
		return NULL;
	}
	ip = (const void *)(p + sizeof(*eth));
	ihl = (ip->version_ihl & 0x0f) * 4u;
	tot = rte_be_to_cpu_16(ip->total_length);
	if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(*ip) ||
	    tot < ihl + sizeof(*udp)) {
		d->bad_ip_header++;
		return NULL;
	}
	if (sizeof(*eth) + tot > len) {
		d->truncated++;
		return NULL;
	}
	if (rte_raw_cksum(ip, ihl) != 0xffff) {
		d->bad_ip_checksum++;
		return NULL;
	}
	if (ip->fragment_offset &
	    rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) {
		d->ip_fragment++;
		return NULL;
	}
	if (ip->next_proto_id != IPPROTO_UDP) {
		d->not_udp++;
		return NULL;
	}
	udp = (const void *)((const uint8_t *)ip + ihl);
	ulen = rte_be_to_cpu_16(udp->dgram_len);
	if (ulen < sizeof(*udp) || ulen > tot - ihl) {
		d->bad_udp_length++;
		return NULL;
	}
	if (udp->dst_port != rte_cpu_to_be_16(udp_port)) {
		d->wrong_port++;
		return NULL;
	}
	if (udp->dgram_cksum != 0 && ulen == tot - ihl &&
	    rte_ipv4_udptcp_cksum_verify(ip, udp) != 0) {
		d->bad_udp_checksum++;
		return NULL;
	}
	mc = (const uint8_t *)udp + sizeof(*udp);
	*plen = ulen - sizeof(*udp);
	if (*plen < KVS_UDP_HDR_LEN) {
		d->bad_mc_header++;
		return NULL;
	}
	if (mc[4] != 0 || mc[5] != 1) {
		d->multi_datagram++;
		return NULL;
	}
	return mc;
}

/* Rewrite m as the reply frame carrying len payload bytes after the
 * memcached header; m's first KVS_HDRS_LEN bytes become the reply headers. */
static void
kvs_build_reply(struct rte_mbuf *m, const uint8_t *src_hdrs, uint16_t req_id,
		uint16_t seq, uint16_t count, const uint8_t *data, uint32_t len)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ipv4_hdr *ip = (void *)(p + sizeof(struct rte_ether_hdr));
	struct rte_udp_hdr *udp = (void *)(ip + 1);
	uint8_t *mc = (uint8_t *)(udp + 1);
	uint32_t frame = KVS_HDRS_LEN + KVS_UDP_HDR_LEN + len;

	if (src_hdrs != p)
		memcpy(p, src_hdrs, KVS_HDRS_LEN);
	mc[0] = req_id >> 8;
	mc[1] = req_id & 0xff;
	mc[2] = seq >> 8;
	mc[3] = seq & 0xff;
	mc[4] = count >> 8;
	mc[5] = count & 0xff;
	mc[6] = 0;
	mc[7] = 0;
	memcpy(mc + KVS_UDP_HDR_LEN, data, len);
	ip->total_length = rte_cpu_to_be_16(frame - sizeof(struct rte_ether_hdr));
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->dgram_len = rte_cpu_to_be_16(frame - sizeof(struct rte_ether_hdr) -
					  sizeof(*ip));
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	m->data_len = (uint16_t)frame;
	m->pkt_len = frame;
}

/* Turn the request headers into reply headers in place (IP options go). */
static void
kvs_reply_headers(struct rte_mbuf *m)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ipv4_hdr *ip = (void *)(p + sizeof(struct rte_ether_hdr));
	uint32_t ihl = (ip->version_ihl & 0x0f) * 4u;
	struct rte_udp_hdr *udp = (void *)((uint8_t *)ip + ihl);
	struct rte_udp_hdr u = *udp;
	rte_be32_t a = ip->src_addr;

	hs_macswap(m);
	ip->src_addr = ip->dst_addr;
	ip->dst_addr = a;
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0;
	ip->packet_id = 0;
	ip->fragment_offset = 0;
	ip->time_to_live = 64;
	udp = (struct rte_udp_hdr *)(ip + 1);
	udp->src_port = u.dst_port;
	udp->dst_port = u.src_port;
}

static uint16_t
kvs_emit(struct rte_mbuf *m, uint16_t req_id, const struct kvs_out *o,
	 struct kvs_drops *d, struct rte_mbuf **tx, uint16_t room)
{
	const uint32_t chunk = KVS_UDP_MAX_PAYLOAD - KVS_UDP_HDR_LEN;
	uint8_t hdrs[KVS_HDRS_LEN];
	uint16_t nb = 0, r, seq, count;
	uint32_t off, n;
	bool first = true;

	kvs_reply_headers(m);
	memcpy(hdrs, rte_pktmbuf_mtod(m, uint8_t *), KVS_HDRS_LEN);
	for (r = 0; r < o->nb_resp; r++) {
		if (o->resp_len[r] == 0)
			continue;
		count = (uint16_t)((o->resp_len[r] + chunk - 1) / chunk);
		for (seq = 0, off = 0; seq < count; seq++, off += chunk) {
			struct rte_mbuf *out = m;

			n = RTE_MIN(chunk, o->resp_len[r] - off);
			if (nb >= room) {
				d->tx_cap++;
				continue;
			}
			if (!first) {
				out = rte_pktmbuf_alloc(kvs_pool);
				if (out == NULL) {
					d->tx_alloc_fail++;
					continue;
				}
			}
			first = false;
			kvs_build_reply(out, hdrs, req_id, seq, count,
					o->buf + o->resp_off[r] + off, n);
			tx[nb++] = out;
		}
	}
	if (first) {
		d->no_reply++;
		rte_pktmbuf_free(m);
	}
	return nb;
}

static uint16_t
kvs_fwd(unsigned int lcore_id, struct hs_lcore_stats *st,
	struct rte_mbuf **rx, uint16_t nb_rx, struct rte_mbuf **tx,
	uint16_t tx_cap)
{
	struct kvs_drops *d = &drops[lcore_id];
	struct kvs_out *o = outs[lcore_id];
	int64_t now_s = (int64_t)time(NULL);
	const uint8_t *mc;
	uint16_t i, nb_tx = 0, req_id;
	uint32_t plen;

	for (i = 0; i < nb_rx; i++) {
		struct rte_mbuf *m = rx[i];

		mc = kvs_parse_frame(m, d, &plen);
		if (mc == NULL) {
			st->app_dropped++;
			rte_pktmbuf_free(m);
			continue;
		}
		req_id = (uint16_t)(mc[0] << 8 | mc[1]);
		kvs_proto_handle(&table, &counters[lcore_id],
				 mc + KVS_UDP_HDR_LEN, plen - KVS_UDP_HDR_LEN,
				 now_s, o);
		nb_tx += kvs_emit(m, req_id, o, d, tx + nb_tx, tx_cap - nb_tx);
	}
	return nb_tx;
}

#define KVS_SUM(arr, field, out) do {					\
	unsigned int _i;						\
	(out) = 0;							\
	for (_i = 0; _i < RTE_MAX_LCORE; _i++)				\
		(out) += (arr)[_i].field;				\
} while (0)

#define KVS_JSON(js, arr, field) do {					\
	uint64_t _v;							\
	KVS_SUM(arr, field, _v);					\
	hs_json_u64(js, #field, _v);					\
} while (0)

static void
kvs_json(struct hs_json *js)
{
	hs_json_obj_open(js, "kvs");
	hs_json_u64(js, "udp_port", udp_port);
	hs_json_u64(js, "slots", table.nb_slots);
	hs_json_u64(js, "max_value", max_value);
	hs_json_u64(js, "items", table.nb_live);
	KVS_JSON(js, counters, requests);
	KVS_JSON(js, counters, cmd_get);
	KVS_JSON(js, counters, get_keys);
	KVS_JSON(js, counters, get_hits);
	KVS_JSON(js, counters, get_misses);
	KVS_JSON(js, counters, cmd_set);
	KVS_JSON(js, counters, set_stored);
	KVS_JSON(js, counters, cmd_delete);
	KVS_JSON(js, counters, delete_hits);
	KVS_JSON(js, counters, delete_misses);
	KVS_JSON(js, counters, errors);
	KVS_JSON(js, counters, client_errors);
	KVS_JSON(js, counters, server_errors);
	KVS_JSON(js, counters, too_large);
	KVS_JSON(js, counters, incomplete);
	KVS_JSON(js, counters, out_overflow);
	hs_json_obj_open(js, "drops");
	KVS_JSON(js, drops, truncated);
	KVS_JSON(js, drops, not_ipv4);
	KVS_JSON(js, drops, bad_ip_header);
	KVS_JSON(js, drops, bad_ip_checksum);
	KVS_JSON(js, drops, ip_fragment);
	KVS_JSON(js, drops, not_udp);
	KVS_JSON(js, drops, wrong_port);
	KVS_JSON(js, drops, bad_udp_length);
	KVS_JSON(js, drops, bad_udp_checksum);
	KVS_JSON(js, drops, bad_mc_header);
	KVS_JSON(js, drops, multi_datagram);
	KVS_JSON(js, drops, multi_segment);
	KVS_JSON(js, drops, no_reply);
	KVS_JSON(js, drops, tx_alloc_fail);
	KVS_JSON(js, drops, tx_cap);
	hs_json_obj_close(js);
	hs_json_obj_close(js);
}

static void
kvs_print(FILE *f)
{
	uint64_t get, hits, set, del, err, cerr, serr;

	KVS_SUM(counters, cmd_get, get);
	KVS_SUM(counters, get_hits, hits);
	KVS_SUM(counters, cmd_set, set);
	KVS_SUM(counters, cmd_delete, del);
	KVS_SUM(counters, errors, err);
	KVS_SUM(counters, client_errors, cerr);
	KVS_SUM(counters, server_errors, serr);
	fprintf(f, "kvs: get %" PRIu64 " (hits %" PRIu64 ") set %" PRIu64
		" delete %" PRIu64 " ERROR %" PRIu64 " CLIENT_ERROR %" PRIu64
		" SERVER_ERROR %" PRIu64 " items %u\n", get, hits, set, del,
		err, cerr, serr, table.nb_live);
}

static const struct hs_engine kvs_engine = {
	.name = "kvs",
	.summary = "memcached-compatible UDP key-value store (get/set/delete)",
	.options = kvs_options,
	.usage = kvs_usage,
	.parse_opt = kvs_parse,
	.init = kvs_init,
	.fwd = kvs_fwd,
	.print = kvs_print,
	.json = kvs_json,
};

int
main(int argc, char **argv)
{
	return hs_fwd_main(argc, argv, &kvs_engine);
}
