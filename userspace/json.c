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

/* length of the well-formed UTF-8 character at s (RFC 3629: no overlongs, no
 * surrogates, nothing past U+10FFFF), or 0 when the byte at s starts none */
static size_t utf8_char(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	unsigned lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

int js_utf8_valid(const char *s)
{
	for (size_t n; *s; s += n)
		if (!(n = utf8_char((const unsigned char *)s)))
			return 0;
	return 1;
}

size_t js_utf8_cut(const char *s, size_t max)
{
	size_t len = strlen(s);

	if (len <= max)
		return len;
	/* back off to the start of the character at max: never inside one */
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

/* s as a JSON string: valid UTF-8 as it is, each byte that is not part of a
 * well-formed character as U+FFFD (the caller keeps the bytes: js_str) */
static void quoted(struct js *j, const char *s)
{
	put(j, "\"", 1);
	while (*s) {
		unsigned char c = *s;
		size_t n = utf8_char((const unsigned char *)s);

		if (!n) {
			put(j, "\\ufffd", 6);
			s++;
		} else if (c == '"' || c == '\\') {
			put(j, "\\", 1);
			put(j, s++, 1);
		} else if (c < 0x20 || c == 0x7f) {
			putf(j, "\\u%04x", c);
			s++;
		} else {
			put(j, s, n);
			s += n;
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
	if (!val) {
		put(j, "null", 4);
		return;
	}
	quoted(j, val);
	/* bytes from the machine that are not UTF-8 (a Latin-1 file name): the
	 * string has U+FFFD for them, KEY_hex keeps every byte */
	if (key && !js_utf8_valid(val)) {
		char name[128];

		snprintf(name, sizeof(name), "%s_hex", key);
		member(j, name);
		put(j, "\"", 1);
		for (const unsigned char *p = (const unsigned char *)val; *p; p++)
			putf(j, "%02x", *p);
		put(j, "\"", 1);
	}
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

void js_append(struct js *j, const char *text)
{
	put(j, text, strlen(text));
}

void js_reopen(struct js *j, const char *object)
{
	size_t n = strlen(object), open = strspn(object, " \t\n");

	while (n > open && object[n - 1] != '}')
		n--;
	if (n <= open)
		return;
	put(j, object, n - 1);
	/* a member before the close: the next one needs its comma */
	n--;
	while (n > open && strchr(" \t\n", object[n - 1]))
		n--;
	j->need_comma = n - open > 1;
}

const char *js_text(const struct js *j)
{
	return j->oom ? NULL : (j->buf ? j->buf : "");
}
