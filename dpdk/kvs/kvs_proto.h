/* SPDX-License-Identifier: BSD-3-Clause
 *
 * memcached ASCII protocol (get, set, delete) over the memcached UDP frame
 * format, answering the way memcached 1.6 does over UDP:
 *
 *  - the 8-byte frame header is request id, sequence, datagram count,
 *    reserved (big-endian); requests must fit one datagram (count 1);
 *  - every command line in the datagram is executed in order;
 *  - each response object becomes its own datagram(s): a get sends one per
 *    hit key, "END\r\n" riding on the last key's object; a response longer
 *    than 1400 bytes (header included) is split with sequence numbers;
 *  - a set whose data block is cut short by the end of the datagram gets no
 *    answer (memcached would wait for more bytes; we are stateless).
 *
 * Independent of DPDK apart from the table's hash, so it is easy to test.
 */

#ifndef _KVS_PROTO_H_
#define _KVS_PROTO_H_

#include <stdint.h>

#include "kvs_table.h"

#define KVS_UDP_HDR_LEN		8
#define KVS_UDP_MAX_PAYLOAD	1400	/* memcached's UDP_MAX_PAYLOAD_SIZE */
#define KVS_MAX_RESP		1024
#define KVS_OUT_CAP		(512 * 1024)

struct kvs_counters {
	uint64_t requests;		/* datagrams handed to the protocol */
	uint64_t cmd_get;
	uint64_t get_keys;
	uint64_t get_hits;
	uint64_t get_misses;
	uint64_t cmd_set;
	uint64_t set_stored;
	uint64_t cmd_delete;
	uint64_t delete_hits;
	uint64_t delete_misses;
	uint64_t errors;		/* ERROR */
	uint64_t client_errors;		/* CLIENT_ERROR ... */
	uint64_t server_errors;		/* SERVER_ERROR ... */
	uint64_t too_large;		/* value above --max-value */
	uint64_t incomplete;		/* line or data block cut short */
	uint64_t out_overflow;		/* responses beyond the output buffer */
};

/* Response objects, each the payload of one or more datagrams. */
struct kvs_out {
	uint32_t len;
	uint16_t nb_resp;
	uint16_t cur_used;		/* current object has bytes */
	uint32_t resp_off[KVS_MAX_RESP];
	uint32_t resp_len[KVS_MAX_RESP];
	uint8_t buf[KVS_OUT_CAP];
};

/* Execute the commands in one datagram payload (after the 8-byte header). */
void kvs_proto_handle(struct kvs_table *t, struct kvs_counters *c,
		      const uint8_t *req, uint32_t len, int64_t now_s,
		      struct kvs_out *out);

#endif /* _KVS_PROTO_H_ */
