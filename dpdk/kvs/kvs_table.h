/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fixed-size hash table for the kvs benchmark: open addressing with linear
 * probing over a power-of-two slot array, one value buffer of --max-value
 * bytes per slot allocated up front, so nothing is allocated per request.
 * Unlike memcached there is no LRU eviction: a full probe window makes a
 * set fail with memcached's "SERVER_ERROR out of memory storing object".
 */

#ifndef _KVS_TABLE_H_
#define _KVS_TABLE_H_

#include <stdbool.h>
#include <stdint.h>

#define KVS_KEY_MAX		250	/* memcached's KEY_MAX_LENGTH */
#define KVS_PROBE_LIMIT		64

struct kvs_item {
	uint8_t state;			/* KVS_SLOT_* */
	uint8_t klen;
	uint32_t flags;
	uint32_t vlen;
	int64_t expire_s;		/* unix seconds, 0 = never */
	char key[KVS_KEY_MAX];
};

struct kvs_table {
	uint32_t nb_slots;		/* power of two */
	uint32_t max_value;		/* bytes per value */
	uint32_t nb_live;
	struct kvs_item *items;
	uint8_t *values;		/* nb_slots * max_value bytes */
};

int kvs_table_init(struct kvs_table *t, uint32_t entries, uint32_t max_value);
void kvs_table_free(struct kvs_table *t);
/* Live, unexpired item or NULL; expired items are removed on the way. */
struct kvs_item *kvs_table_get(struct kvs_table *t, const char *key,
			       uint8_t klen, int64_t now_s);
uint8_t *kvs_table_value(const struct kvs_table *t, const struct kvs_item *it);
/* Slot to store into (old value replaced) or NULL when no room. */
struct kvs_item *kvs_table_put(struct kvs_table *t, const char *key,
			       uint8_t klen, int64_t now_s);
bool kvs_table_delete(struct kvs_table *t, const char *key, uint8_t klen,
		      int64_t now_s);

#endif /* _KVS_TABLE_H_ */
