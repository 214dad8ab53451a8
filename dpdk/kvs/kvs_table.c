/* SPDX-License-Identifier: BSD-3-Clause */

#include <stdlib.h>
#include <string.h>

#include <rte_jhash.h>

#include "kvs_table.h"

enum { KVS_SLOT_EMPTY = 0, KVS_SLOT_LIVE, KVS_SLOT_DELETED };

int
kvs_table_init(struct kvs_table *t, uint32_t entries, uint32_t max_value)
{
	uint32_t n = 1;

	while (n < entries && n < (1u << 30))
		n <<= 1;
	memset(t, 0, sizeof(*t));
	t->nb_slots = n;
	t->max_value = max_value;
	t->items = calloc(n, sizeof(*t->items));
	t->values = malloc((size_t)n * (max_value ? max_value : 1));
	if (t->items == NULL || t->values == NULL) {
		kvs_table_free(t);
		return -1;
	}
	return 0;
}

void
kvs_table_free(struct kvs_table *t)
{
	free(t->items);
	free(t->values);
	t->items = NULL;
	t->values = NULL;
}

static inline bool
kvs_expired(const struct kvs_item *it, int64_t now_s)
{
	return it->expire_s != 0 && now_s >= it->expire_s;
}

static inline bool
kvs_key_eq(const struct kvs_item *it, const char *key, uint8_t klen)
{
	return it->klen == klen && memcmp(it->key, key, klen) == 0;
}

static void
kvs_remove(struct kvs_table *t, struct kvs_item *it)
{
	it->state = KVS_SLOT_DELETED;
	t->nb_live--;
}

/* Find key; *free_slot gets the first reusable slot in the probe window. */
static struct kvs_item *
kvs_find(struct kvs_table *t, const char *key, uint8_t klen, int64_t now_s,
	 struct kvs_item **free_slot)
{
	uint32_t mask = t->nb_slots - 1;
	uint32_t h = rte_jhash(key, klen, 0x4853) & mask;
	uint32_t i;

	if (free_slot != NULL)
		*free_slot = NULL;
	for (i = 0; i < KVS_PROBE_LIMIT && i < t->nb_slots; i++) {
		struct kvs_item *it = &t->items[(h + i) & mask];

		if (it->state == KVS_SLOT_LIVE && kvs_key_eq(it, key, klen)) {
			if (!kvs_expired(it, now_s))
				return it;
			kvs_remove(t, it);
		}
		if (it->state != KVS_SLOT_LIVE && free_slot != NULL &&
		    *free_slot == NULL)
			*free_slot = it;
		if (it->state == KVS_SLOT_EMPTY)
			break;
	}
	return NULL;
}

struct kvs_item *
kvs_table_get(struct kvs_table *t, const char *key, uint8_t klen,
	      int64_t now_s)
{
	return kvs_find(t, key, klen, now_s, NULL);
}

uint8_t *
kvs_table_value(const struct kvs_table *t, const struct kvs_item *it)
{
	return t->values + (size_t)(it - t->items) * t->max_value;
}

struct kvs_item *
kvs_table_put(struct kvs_table *t, const char *key, uint8_t klen,
	      int64_t now_s)
{
	struct kvs_item *slot, *it;

	it = kvs_find(t, key, klen, now_s, &slot);
	if (it != NULL)
		return it;
	if (slot == NULL)
		return NULL;
	slot->state = KVS_SLOT_LIVE;
	slot->klen = klen;
	memcpy(slot->key, key, klen);
	t->nb_live++;
	return slot;
}

bool
kvs_table_delete(struct kvs_table *t, const char *key, uint8_t klen,
		 int64_t now_s)
{
	struct kvs_item *it = kvs_find(t, key, klen, now_s, NULL);

	if (it == NULL)
		return false;
	kvs_remove(t, it);
	return true;
}
