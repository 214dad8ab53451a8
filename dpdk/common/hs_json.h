/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Minimal streaming JSON writer used for the --json result files.
 * Nested objects mirror the simulator's dotted stat names:
 * "loadgen.tx_packets" is written as {"loadgen": {"tx_packets": N}}.
 */

#ifndef _HS_JSON_H_
#define _HS_JSON_H_

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define HS_JSON_MAX_DEPTH 16

struct hs_json {
	FILE *f;
	int depth;
	int count[HS_JSON_MAX_DEPTH];	/* members written at each depth */
};

void hs_json_begin(struct hs_json *js, FILE *f);
void hs_json_end(struct hs_json *js);
void hs_json_obj_open(struct hs_json *js, const char *key);
void hs_json_obj_close(struct hs_json *js);
void hs_json_arr_open(struct hs_json *js, const char *key);
void hs_json_arr_close(struct hs_json *js);
void hs_json_u64(struct hs_json *js, const char *key, uint64_t v);
void hs_json_i64(struct hs_json *js, const char *key, int64_t v);
void hs_json_dbl(struct hs_json *js, const char *key, double v);
void hs_json_str(struct hs_json *js, const char *key, const char *v);

#endif /* _HS_JSON_H_ */
