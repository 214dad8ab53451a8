/* SPDX-License-Identifier: BSD-3-Clause */

#include <math.h>
#include <string.h>

#include "hs_json.h"

/* Write the separator and, inside an object, the quoted key. */
static void
hs_json_key(struct hs_json *js, const char *key)
{
	if (js->count[js->depth]++ > 0)
		fputc(',', js->f);
	fputc('\n', js->f);
	fprintf(js->f, "%*s", 2 * js->depth, "");
	if (key != NULL)
		fprintf(js->f, "\"%s\": ", key);
}

static void
hs_json_push(struct hs_json *js, char c)
{
	fputc(c, js->f);
	if (js->depth + 1 < HS_JSON_MAX_DEPTH)
		js->depth++;
	js->count[js->depth] = 0;
}

static void
hs_json_pop(struct hs_json *js, char c)
{
	int had = js->count[js->depth];

	if (js->depth > 0)
		js->depth--;
	if (had > 0)
		fprintf(js->f, "\n%*s", 2 * js->depth, "");
	fputc(c, js->f);
}

void
hs_json_begin(struct hs_json *js, FILE *f)
{
	memset(js, 0, sizeof(*js));
	js->f = f;
	hs_json_push(js, '{');
}

void
hs_json_end(struct hs_json *js)
{
	while (js->depth > 0)
		hs_json_pop(js, '}');
	fputc('\n', js->f);
}

void
hs_json_obj_open(struct hs_json *js, const char *key)
{
	hs_json_key(js, key);
	hs_json_push(js, '{');
}

void
hs_json_obj_close(struct hs_json *js)
{
	hs_json_pop(js, '}');
}

void
hs_json_arr_open(struct hs_json *js, const char *key)
{
	hs_json_key(js, key);
	hs_json_push(js, '[');
}

void
hs_json_arr_close(struct hs_json *js)
{
	hs_json_pop(js, ']');
}

void
hs_json_u64(struct hs_json *js, const char *key, uint64_t v)
{
	hs_json_key(js, key);
	fprintf(js->f, "%" PRIu64, v);
}

void
hs_json_i64(struct hs_json *js, const char *key, int64_t v)
{
	hs_json_key(js, key);
	fprintf(js->f, "%" PRId64, v);
}

void
hs_json_dbl(struct hs_json *js, const char *key, double v)
{
	hs_json_key(js, key);
	if (isfinite(v))
		fprintf(js->f, "%.9g", v);
	else
		fputs("null", js->f);
}

void
hs_json_str(struct hs_json *js, const char *key, const char *v)
{
	const char *p;

	hs_json_key(js, key);
	fputc('"', js->f);
	for (p = v; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', js->f);
		if ((unsigned char)*p < 0x20)
			fprintf(js->f, "\\u%04x", *p);
		else
			fputc(*p, js->f);
	}
	fputc('"', js->f);
}
