/* SPDX-License-Identifier: BSD-3-Clause */

#include <math.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "hs_pkt.h"
#include "lg_source.h"

#define LG_HDRS_LEN	42

/* xorshift64*: small, fast and reproducible for a given --seed. */
uint64_t
lg_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static double
lg_rand_unit(uint64_t *state)
{
	/* (0, 1]: never 0 so that log() stays finite */
	return ((lg_rand(state) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

/* Build the template frame of one size: headers, then a byte pattern. */
static uint8_t *
lg_template(const struct lg_source *s, uint16_t size)
{
	uint16_t len = size - HS_FCS_LEN;
	uint8_t *f = calloc(1, LG_MAX_FRAME);
	struct rte_ether_hdr *eth = (void *)f;
	struct rte_ipv4_hdr *ip = (void *)(eth + 1);
	struct rte_udp_hdr *udp = (void *)(ip + 1);
	uint16_t i;

	if (f == NULL)
		return NULL;
	rte_ether_addr_copy(&s->dst_mac, &eth->dst_addr);
	rte_ether_addr_copy(&s->src_mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(len - sizeof(*eth));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(s->src_ip);
	ip->dst_addr = rte_cpu_to_be_32(s->dst_ip);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = rte_cpu_to_be_16(s->sport_base);
	udp->dst_port = rte_cpu_to_be_16(s->dport);
	udp->dgram_len = rte_cpu_to_be_16(len - sizeof(*eth) - sizeof(*ip));
	udp->dgram_cksum = 0;		/* optional for UDP over IPv4 */
	for (i = LG_HDRS_LEN; i < len; i++)
		f[i] = (uint8_t)i;
	return f;
}

int
lg_source_synthetic_init(struct lg_source *s)
{
	uint16_t i;

	s->weight_total = 0;
	for (i = 0; i < s->nb_sizes; i++) {
		if (s->sizes[i] < LG_HDRS_LEN + HS_FCS_LEN +
		    (s->tag ? HS_TAG_LEN : 0) || s->sizes[i] > LG_MAX_FRAME) {
			fprintf(stderr, "invalid frame size %u: expected %u..%u "
				"bytes including FCS\n", s->sizes[i],
				LG_HDRS_LEN + HS_FCS_LEN + HS_TAG_LEN,
				LG_MAX_FRAME);
			return -1;
		}
		s->tmpl[i] = lg_template(s, s->sizes[i]);
		if (s->tmpl[i] == NULL)
			return -1;
		s->weight_total += s->weights[i];
	}
	if (s->tag && s->tag_off + HS_TAG_LEN + HS_FCS_LEN > s->sizes[0]) {
		for (i = 0; i < s->nb_sizes; i++)
			if (s->tag_off + HS_TAG_LEN + HS_FCS_LEN > s->sizes[i]) {
				fprintf(stderr, "--tag-offset %u does not fit a "
					"%u-byte frame\n", s->tag_off,
					s->sizes[i]);
				return -1;
			}
	}
	return 0;
}

int
lg_source_trace_load(struct lg_source *s, const char *path,
		     uint32_t max_frames)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *hdr;
	const u_char *data;
	uint64_t first_ns = 0, ts;
	uint32_t cap = 1024;
	int tsprec, ret;
	pcap_t *pc;

	pc = pcap_open_offline_with_tstamp_precision(path,
			PCAP_TSTAMP_PRECISION_NANO, err);
	if (pc == NULL) {
		fprintf(stderr, "cannot open pcap %s: %s\n", path, err);
		return -1;
	}
	tsprec = pcap_get_tstamp_precision(pc);
	s->trace = malloc(cap * sizeof(*s->trace));
	s->trace_len = 0;
	while (s->trace != NULL && s->trace_len < max_frames &&
	       (ret = pcap_next_ex(pc, &hdr, &data)) == 1) {
		if (hdr->caplen < RTE_ETHER_HDR_LEN ||
		    hdr->caplen > LG_MAX_FRAME - HS_FCS_LEN)
			continue;
		if (s->trace_len == cap) {
			cap *= 2;
			s->trace = realloc(s->trace, cap * sizeof(*s->trace));
			if (s->trace == NULL)
				break;
		}
		ts = (uint64_t)hdr->ts.tv_sec * 1000000000ull +
			(uint64_t)hdr->ts.tv_usec *
			(tsprec == PCAP_TSTAMP_PRECISION_NANO ? 1 : 1000);
		if (s->trace_len == 0)
			first_ns = ts;
		s->trace[s->trace_len].len = (uint16_t)hdr->caplen;
		s->trace[s->trace_len].ts_ns = ts >= first_ns ? ts - first_ns : 0;
		s->trace[s->trace_len].data = malloc(hdr->caplen);
		if (s->trace[s->trace_len].data == NULL)
			break;
		memcpy(s->trace[s->trace_len].data, data, hdr->caplen);
		s->trace_len++;
	}
	pcap_close(pc);
	if (s->trace == NULL || s->trace_len == 0) {
		fprintf(stderr, "pcap %s holds no usable Ethernet frames\n",
			path);
		return -1;
	}
	s->trace_pos = 0;
	return 0;
}

double
lg_source_mean_size(const struct lg_source *s)
{
	double sum = 0, w = 0;
	uint32_t i;

	if (s->trace != NULL) {
		for (i = 0; i < s->trace_len; i++)
			sum += s->trace[i].len + HS_FCS_LEN;
		return sum / s->trace_len;
	}
	for (i = 0; i < s->nb_sizes; i++) {
		sum += (double)s->sizes[i] * s->weights[i];
		w += s->weights[i];
	}
	return w > 0 ? sum / w : 64.0;
}

void
lg_source_rewind(struct lg_source *s, uint32_t loops)
{
	s->trace_pos = 0;
	s->loops_left = loops;
	s->trace_loop_forever = loops == 0;
}

static void
lg_write_tag(uint8_t *p, uint16_t flow, uint32_t seq, uint64_t tx_ns)
{
	struct hs_tag *t = (struct hs_tag *)p;

	t->magic = rte_cpu_to_be_16(HS_TAG_MAGIC);
	t->flow = rte_cpu_to_be_16(flow);
	t->seq = rte_cpu_to_be_32(seq);
	t->tx_ns = rte_cpu_to_be_64(tx_ns);
}

static uint16_t
lg_pick_size(struct lg_source *s)
{
	uint32_t r, i;

	if (s->nb_sizes == 1)
		return 0;
	r = (uint32_t)(lg_rand(&s->rng) % s->weight_total);
	for (i = 0; i < s->nb_sizes; i++) {
		if (r < s->weights[i])
			return (uint16_t)i;
		r -= s->weights[i];
	}
	return 0;
}

bool
lg_source_next(struct lg_source *s, struct rte_mbuf *m, uint32_t seq,
	       uint64_t tx_ns, uint32_t *frame_bytes)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	uint16_t len, flow = 0;

	if (s->trace != NULL) {
		const struct lg_trace_frame *f;

		if (s->trace_pos >= s->trace_len) {
			if (!s->trace_loop_forever && s->loops_left <= 1)
				return false;
			if (!s->trace_loop_forever)
				s->loops_left--;
			s->trace_pos = 0;
		}
		f = &s->trace[s->trace_pos++];
		len = f->len;
		memcpy(p, f->data, len);
		if (s->rewrite_dst_mac)
			rte_ether_addr_copy(&s->dst_mac,
					    (struct rte_ether_addr *)p);
	} else {
		uint16_t k = lg_pick_size(s);
		struct rte_udp_hdr *udp;

		len = s->sizes[k] - HS_FCS_LEN;
		memcpy(p, s->tmpl[k], len);
		flow = (uint16_t)s->next_flow;
		if (++s->next_flow >= s->flows)
			s->next_flow = 0;
		udp = (struct rte_udp_hdr *)(p + 34);
		udp->src_port = rte_cpu_to_be_16((uint16_t)(s->sport_base +
							     flow));
	}
	if (s->tag && len >= s->tag_off + HS_TAG_LEN)
		lg_write_tag(p + s->tag_off, flow, seq, tx_ns);
	m->data_len = len;
	m->pkt_len = len;
	*frame_bytes = len + HS_FCS_LEN;
	return true;
}

double
lg_source_gap_ns(struct lg_source *s)
{
	if (s->trace != NULL && s->trace_timing) {
		uint32_t i = s->trace_pos;	/* frame about to be sent */
		uint64_t prev, next;

		if (i == 0 || i >= s->trace_len) {
			/* loop boundary: use the trace's mean gap */
			next = s->trace[s->trace_len - 1].ts_ns;
			return s->trace_len > 1 ?
				(double)next / (s->trace_len - 1) /
				s->trace_speed : 0.0;
		}
		prev = s->trace[i - 1].ts_ns;
		next = s->trace[i].ts_ns;
		return next > prev ? (double)(next - prev) / s->trace_speed
				   : 0.0;
	}
	if (s->pps <= 0)
		return 0.0;
	if (s->dist == LG_DIST_POISSON)
		return -log(lg_rand_unit(&s->rng)) * 1e9 / s->pps;
	return 1e9 / s->pps;
}
