/* SPDX-License-Identifier: BSD-3-Clause */

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvs_proto.h"

#define KVS_MAX_TOKENS		1024
#define KVS_REALTIME_MAXDELTA	(60 * 60 * 24 * 30)	/* memcached's */

struct kvs_token {
	const char *p;
	uint32_t len;
};

struct kvs_req {
	struct kvs_table *t;
	struct kvs_counters *c;
	struct kvs_out *out;
	int64_t now_s;
	const uint8_t *buf;
	uint32_t len;
	uint32_t pos;			/* next unread byte */
	struct kvs_token tok[KVS_MAX_TOKENS];
	uint32_t ntok;
};

static const char ERR_FORMAT[] = "CLIENT_ERROR bad command line format";
static const char ERR_DELETE[] = "CLIENT_ERROR bad command line format.  "
	"Usage: delete <key> [noreply]";

/* Start a new response object (an unused current one is reused). */
static void
out_begin(struct kvs_out *o)
{
	if (o->nb_resp > 0 && !o->cur_used)
		return;
	if (o->nb_resp >= KVS_MAX_RESP)
		return;
	o->resp_off[o->nb_resp] = o->len;
	o->resp_len[o->nb_resp] = 0;
	o->nb_resp++;
	o->cur_used = 0;
}

static void
out_add(struct kvs_req *r, const void *data, uint32_t n)
{
	struct kvs_out *o = r->out;

	if (o->nb_resp == 0)
		out_begin(o);
	if (o->len + n > KVS_OUT_CAP || o->nb_resp > KVS_MAX_RESP ||
	    o->resp_off[o->nb_resp - 1] + o->resp_len[o->nb_resp - 1] !=
	    o->len) {
		r->c->out_overflow++;
		return;
	}
	memcpy(o->buf + o->len, data, n);
	o->len += n;
	o->resp_len[o->nb_resp - 1] += n;
	o->cur_used = 1;
}

/* A whole one-line response in its own object, e.g. "STORED". */
static void
out_line(struct kvs_req *r, const char *s)
{
	out_begin(r->out);
	out_add(r, s, strlen(s));
	out_add(r, "\r\n", 2);
}

static void
client_error(struct kvs_req *r, const char *msg, bool noreply)
{
	r->c->client_errors++;
	if (!noreply)
		out_line(r, msg);
}

static void
server_error(struct kvs_req *r, const char *msg, bool noreply)
{
	r->c->server_errors++;
	if (!noreply)
		out_line(r, msg);
}

static bool
tok_is(const struct kvs_token *t, const char *s)
{
	size_t n = strlen(s);

	return t->len == n && memcmp(t->p, s, n) == 0;
}

/* memcached's safe_strtoul/safe_strtol: decimal, whole token. */
static bool
tok_num(const struct kvs_token *t, bool is_signed, long long *v)
{
	char tmp[32];
	char *end;

	if (t->len == 0 || t->len >= sizeof(tmp))
		return false;
	memcpy(tmp, t->p, t->len);
	tmp[t->len] = '\0';
	errno = 0;
	if (is_signed) {
		*v = strtoll(tmp, &end, 10);
		if (*v < LONG_MIN || *v > LONG_MAX)
			return false;
	} else {
		if (memchr(tmp, '-', t->len) != NULL)
			return false;
		*v = (long long)strtoull(tmp, &end, 10);
	}
	return errno == 0 && end != tmp && *end == '\0';
}

static void
tokenize(struct kvs_req *r, const char *line, uint32_t n)
{
	const char *nul = memchr(line, '\0', n);
	uint32_t i = 0, start;

	if (nul != NULL)
		n = nul - line;
	r->ntok = 0;
	while (i < n && r->ntok < KVS_MAX_TOKENS) {
		while (i < n && line[i] == ' ')
			i++;
		if (i == n)
			break;
		start = i;
		while (i < n && line[i] != ' ')
			i++;
		r->tok[r->ntok].p = line + start;
		r->tok[r->ntok].len = i - start;
		r->ntok++;
	}
}

static void
cmd_get(struct kvs_req *r)
{
	char hdr[64 + KVS_KEY_MAX];
	uint32_t i;
	int n;

	r->c->cmd_get++;
	for (i = 1; i < r->ntok; i++) {
		const struct kvs_token *k = &r->tok[i];
		struct kvs_item *it;

		if (k->len > KVS_KEY_MAX) {
			client_error(r, ERR_FORMAT, false);
			return;
		}
		r->c->get_keys++;
		out_begin(r->out);
		it = kvs_table_get(r->t, k->p, (uint8_t)k->len, r->now_s);
		if (it == NULL) {
			r->c->get_misses++;
			continue;
		}
		r->c->get_hits++;
		n = snprintf(hdr, sizeof(hdr), "VALUE %.*s %u %u\r\n",
			     (int)it->klen, it->key, it->flags, it->vlen);
		out_add(r, hdr, (uint32_t)n);
		out_add(r, kvs_table_value(r->t, it), it->vlen);
		out_add(r, "\r\n", 2);
	}
	out_add(r, "END\r\n", 5);
}

static int64_t
expire_at(long long exptime, int64_t now_s)
{
	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return 1;			/* already in the past */
	if (exptime > KVS_REALTIME_MAXDELTA)
		return exptime;			/* absolute unix time */
	return now_s + exptime;
}

static void
cmd_set(struct kvs_req *r)
{
	const struct kvs_token *key = &r->tok[1];
	bool noreply = r->ntok == 6 && tok_is(&r->tok[5], "noreply");
	long long flags, exptime, vlen;
	struct kvs_item *it;
	const uint8_t *data;

	r->c->cmd_set++;
	if (key->len > KVS_KEY_MAX ||
	    !tok_num(&r->tok[2], false, &flags) ||
	    !tok_num(&r->tok[3], true, &exptime) ||
	    !tok_num(&r->tok[4], true, &vlen) ||
	    vlen < 0 || vlen > INT_MAX - 2) {
		client_error(r, ERR_FORMAT, false);
		return;
	}
	if (vlen > r->t->max_value) {
		r->c->too_large++;
		server_error(r, "SERVER_ERROR object too large for cache",
			     noreply);
		/* swallow the data block */
		r->pos = (uint64_t)r->pos + vlen + 2 > r->len ?
			r->len : r->pos + (uint32_t)vlen + 2;
		return;
	}
	if ((uint64_t)r->pos + vlen + 2 > r->len) {
		r->c->incomplete++;
		r->pos = r->len;
		return;
	}
	data = r->buf + r->pos;
	r->pos += (uint32_t)vlen + 2;
	if (data[vlen] != '\r' || data[vlen + 1] != '\n') {
		client_error(r, "CLIENT_ERROR bad data chunk", noreply);
		return;
	}
	if (exptime < 0) {
		/* stored and immediately expired, as memcached does */
		kvs_table_delete(r->t, key->p, (uint8_t)key->len, r->now_s);
		goto stored;
	}
	it = kvs_table_put(r->t, key->p, (uint8_t)key->len, r->now_s);
	if (it == NULL) {
		server_error(r, "SERVER_ERROR out of memory storing object",
			     noreply);
		return;
	}
	it->flags = (uint32_t)flags;
	it->vlen = (uint32_t)vlen;
	it->expire_s = expire_at(exptime, r->now_s);
	memcpy(kvs_table_value(r->t, it), data, vlen);
stored:
	r->c->set_stored++;
	if (!noreply)
		out_line(r, "STORED");
}

static void
cmd_delete(struct kvs_req *r)
{
	const struct kvs_token *key = &r->tok[1];
	bool noreply = r->ntok >= 3 && tok_is(&r->tok[r->ntok - 1], "noreply");
	bool hold_zero = r->ntok >= 3 && tok_is(&r->tok[2], "0");

	r->c->cmd_delete++;
	if (r->ntok > 2 && !((r->ntok == 3 && (hold_zero || noreply)) ||
			     (r->ntok == 4 && hold_zero && noreply))) {
		client_error(r, ERR_DELETE, noreply);
		return;
	}
	if (key->len > KVS_KEY_MAX) {
		client_error(r, ERR_FORMAT, noreply);
		return;
	}
	if (kvs_table_delete(r->t, key->p, (uint8_t)key->len, r->now_s)) {
		r->c->delete_hits++;
		if (!noreply)
			out_line(r, "DELETED");
	} else {
		r->c->delete_misses++;
		if (!noreply)
			out_line(r, "NOT_FOUND");
	}
}

static void
dispatch(struct kvs_req *r)
{
	if (r->ntok >= 2 && tok_is(&r->tok[0], "get")) {
		cmd_get(r);
	} else if ((r->ntok == 5 || r->ntok == 6) &&
		   tok_is(&r->tok[0], "set")) {
		cmd_set(r);
	} else if (r->ntok >= 2 && r->ntok <= 4 &&
		   tok_is(&r->tok[0], "delete")) {
		cmd_delete(r);
	} else {
		r->c->errors++;
		out_line(r, "ERROR");
	}
}

void
kvs_proto_handle(struct kvs_table *t, struct kvs_counters *c,
		 const uint8_t *req, uint32_t len, int64_t now_s,
		 struct kvs_out *out)
{
	static __thread struct kvs_req r;
	const uint8_t *nl;
	uint32_t line_len;

	out->len = 0;
	out->nb_resp = 0;
	out->cur_used = 0;
	r.t = t;
	r.c = c;
	r.out = out;
	r.now_s = now_s;
	r.buf = req;
	r.len = len;
	r.pos = 0;
	c->requests++;
	while (r.pos < len) {
		nl = memchr(req + r.pos, '\n', len - r.pos);
		if (nl == NULL) {
			c->incomplete++;
			break;
		}
		line_len = (uint32_t)(nl - (req + r.pos));
		if (line_len > 0 && req[r.pos + line_len - 1] == '\r')
			line_len--;
		tokenize(&r, (const char *)req + r.pos, line_len);
		r.pos = (uint32_t)(nl - req) + 1;
		dispatch(&r);
	}
}
