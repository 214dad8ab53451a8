/* SPDX-License-Identifier: BSD-3-Clause */

#include <math.h>
#include <string.h>

#include "lg_hist.h"

static inline unsigned int
lg_hist_index(uint64_t v)
{
	unsigned int msb, shift;

	if (v < 2 * LG_HIST_SUB)
		return (unsigned int)v;
	msb = 63 - __builtin_clzll(v);
	shift = msb - LG_HIST_SUB_BITS;
	return 2 * LG_HIST_SUB + (shift - 1) * LG_HIST_SUB +
		(unsigned int)((v >> shift) - LG_HIST_SUB);
}

/* Inclusive value range of bucket i. */
static void
lg_hist_range(unsigned int i, uint64_t *lo, uint64_t *hi)
{
	unsigned int shift, sub;

	if (i < 2 * LG_HIST_SUB) {
		*lo = *hi = i;
		return;
	}
	shift = (i - 2 * LG_HIST_SUB) / LG_HIST_SUB + 1;
	sub = (i - 2 * LG_HIST_SUB) % LG_HIST_SUB + LG_HIST_SUB;
	*lo = (uint64_t)sub << shift;
	*hi = *lo + (1ull << shift) - 1;
}

void
lg_hist_reset(struct lg_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void
lg_hist_add(struct lg_hist *h, uint64_t v)
{
	h->buckets[lg_hist_index(v)]++;
	h->count++;
	h->sum += (double)v;
	h->sum_sq += (double)v * (double)v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

uint64_t
lg_hist_quantile(const struct lg_hist *h, double q)
{
	uint64_t target, seen = 0, lo, hi;
	unsigned int i;

	if (h->count == 0)
		return 0;
	target = (uint64_t)ceil(q * (double)h->count);
	if (target < 1)
		target = 1;
	for (i = 0; i < LG_HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= target) {
			lg_hist_range(i, &lo, &hi);
			if (hi > h->max)
				hi = h->max;
			if (hi < h->min)
				hi = h->min;
			return hi;
		}
	}
	return h->max;
}

double
lg_hist_mean(const struct lg_hist *h)
{
	return h->count ? h->sum / (double)h->count : 0.0;
}

double
lg_hist_std(const struct lg_hist *h)
{
	double m, var;

	if (h->count < 2)
		return 0.0;
	m = lg_hist_mean(h);
	var = h->sum_sq / (double)h->count - m * m;
	return var > 0 ? sqrt(var) : 0.0;
}

void
lg_hist_json(const struct lg_hist *h, struct hs_json *js, const char *key,
	     int with_buckets)
{
	uint64_t lo, hi;
	unsigned int i;

	hs_json_obj_open(js, key);
	hs_json_u64(js, "count", h->count);
	hs_json_u64(js, "min", h->count ? h->min : 0);
	hs_json_dbl(js, "mean", lg_hist_mean(h));
	hs_json_u64(js, "p50", lg_hist_quantile(h, 0.50));
	hs_json_u64(js, "p90", lg_hist_quantile(h, 0.90));
	hs_json_u64(js, "p99", lg_hist_quantile(h, 0.99));
	hs_json_u64(js, "p999", lg_hist_quantile(h, 0.999));
	hs_json_u64(js, "max", h->max);
	hs_json_dbl(js, "std", lg_hist_std(h));
	if (with_buckets) {
		/* [[lowest value in bucket, count], ...] for non-empty ones */
		hs_json_arr_open(js, "histogram");
		for (i = 0; i < LG_HIST_BUCKETS; i++) {
			if (h->buckets[i] == 0)
				continue;
			lg_hist_range(i, &lo, &hi);
			hs_json_arr_open(js, NULL);
			hs_json_u64(js, NULL, lo);
			hs_json_u64(js, NULL, h->buckets[i]);
			hs_json_arr_close(js);
		}
		hs_json_arr_close(js);
	}
	hs_json_obj_close(js);
}
