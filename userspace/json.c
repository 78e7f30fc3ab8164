/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"

void js_init(struct js *j)
{
	memset(j, 0, sizeof(*j));
}

void js_free(struct js *j)
{
	free(j->buf);
	js_init(j);
}

static void put(struct js *j, const char *s, size_t n)
{
	if (j->oom)
		return;
	if (j->len + n + 1 > j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 1024;
		char *b;

		while (cap < j->len + n + 1)
			cap *= 2;
		b = realloc(j->buf, cap);
		if (!b) {
			j->oom = 1;
			return;
		}
		j->buf = b;
		j->cap = cap;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = 0;
}

static void putf(struct js *j, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	put(j, tmp, n);
}

static void quoted(struct js *j, const char *s)
{
	put(j, "\"", 1);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\') {
			put(j, "\\", 1);
			put(j, s, 1);
		} else if (c < 0x20) {
			putf(j, "\\u%04x", c);
		} else {
			put(j, s, 1);
		}
	}
	put(j, "\"", 1);
}

static void member(struct js *j, const char *key)
{
	if (j->need_comma)
		put(j, ",", 1);
	j->need_comma = 1;
	if (key) {
		quoted(j, key);
		put(j, ":", 1);
	}
}

void js_open(struct js *j, const char *key, char bracket)
{
	member(j, key);
	put(j, &bracket, 1);
	j->need_comma = 0;
}

void js_close(struct js *j, char bracket)
{
	put(j, &bracket, 1);
	j->need_comma = 1;
}

void js_str(struct js *j, const char *key, const char *val)
{
	member(j, key);
	if (val)
		quoted(j, val);
	else
		put(j, "null", 4);
}

void js_u64(struct js *j, const char *key, uint64_t val)
{
	member(j, key);
	putf(j, "%llu", (unsigned long long)val);
}

void js_i64(struct js *j, const char *key, int64_t val)
{
	member(j, key);
	putf(j, "%lld", (long long)val);
}

void js_bool(struct js *j, const char *key, int val)
{
	member(j, key);
	put(j, val ? "true" : "false", val ? 4 : 5);
}

void js_raw(struct js *j, const char *key, const char *json)
{
	member(j, key);
	if (json && *json)
		put(j, json, strlen(json));
	else
		put(j, "null", 4);
}

const char *js_text(const struct js *j)
{
	return j->oom ? NULL : (j->buf ? j->buf : "");
}
