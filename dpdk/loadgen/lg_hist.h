/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Log-linear latency histogram in the spirit of HdrHistogram: values below
 * 2 * 2^LG_HIST_SUB_BITS are exact, above that every power of two is split
 * into 2^LG_HIST_SUB_BITS equal buckets, so a percentile is reported within
 * 1/256 (0.4 %) of the true value. Mean and standard deviation come from
 * exact running sums, min and max are exact.
 */

#ifndef _LG_HIST_H_
#define _LG_HIST_H_

#include <stdint.h>

#include "hs_json.h"

#define LG_HIST_SUB_BITS	8
#define LG_HIST_SUB		(1u << LG_HIST_SUB_BITS)
#define LG_HIST_BUCKETS		(2 * LG_HIST_SUB + \
				 (64 - LG_HIST_SUB_BITS - 1) * LG_HIST_SUB)

struct lg_hist {
	uint64_t count;
	uint64_t min;
	uint64_t max;
	double sum;
	double sum_sq;
	uint64_t buckets[LG_HIST_BUCKETS];
};

void lg_hist_reset(struct lg_hist *h);
void lg_hist_add(struct lg_hist *h, uint64_t v);
/* Highest value equivalent to the bucket holding quantile q (0..1). */
uint64_t lg_hist_quantile(const struct lg_hist *h, double q);
double lg_hist_mean(const struct lg_hist *h);
double lg_hist_std(const struct lg_hist *h);
/* {min, mean, p50, p90, p99, p999, max, std, count[, histogram]} */
void lg_hist_json(const struct lg_hist *h, struct hs_json *js, const char *key,
		  int with_buckets);

#endif /* _LG_HIST_H_ */
