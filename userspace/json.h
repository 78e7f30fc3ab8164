/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A growable JSON text: enough to write the record file's header and trailer. */
#ifndef HS_JSON_H
#define HS_JSON_H

#include <stddef.h>
#include <stdint.h>

struct js {
	char *buf;
	size_t len, cap;
	int need_comma;
	int oom;
};

void js_init(struct js *j);
void js_free(struct js *j);
void js_open(struct js *j, const char *key, char bracket);	/* key NULL inside arrays */
void js_close(struct js *j, char bracket);
/* val NULL -> null; bytes of val that are not UTF-8 become U+FFFD, and a
 * member KEY_hex beside it holds val's bytes in hex */
void js_str(struct js *j, const char *key, const char *val);
void js_u64(struct js *j, const char *key, uint64_t val);
void js_i64(struct js *j, const char *key, int64_t val);
void js_bool(struct js *j, const char *key, int val);
void js_raw(struct js *j, const char *key, const char *json);	/* already JSON */
void js_append(struct js *j, const char *text);	/* text as it is: a plain growable string */
/* object (one JSON object's text) without its closing brace, for more members */
void js_reopen(struct js *j, const char *object);
const char *js_text(const struct js *j);	/* NULL if memory ran out */
int js_utf8_valid(const char *s);	/* 1 when s is well-formed UTF-8 */
/* the length of s cut to at most max bytes without splitting a UTF-8 character */
size_t js_utf8_cut(const char *s, size_t max);
/* json_check.c: 0 when text is one JSON object and nothing else; else -1 and
 * why (with the byte offset). key not NULL: *val and *vlen are the raw bytes
 * of that top-level member's string value (NULL: no such string member) */
int js_check_object(const char *text, const char *key, const char **val, size_t *vlen,
		    char *why, size_t whylen);

#endif
