/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Is a text one JSON value (RFC 8259)? For JSON the recorder copies into a
 * file's header as it is (--calibration): a reader must be able to parse it. */
#include <stdio.h>
#include <string.h>
#include "json.h"

#define MAX_DEPTH 64

struct jp {
	const char *s, *p;
	const char *err;
	/* a member of the top object wanted by name: its string value, raw */
	const char *key, *val;
	size_t vlen;
};

static int value(struct jp *j, int depth);

static void ws(struct jp *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

static int fail(struct jp *j, const char *why)
{
	j->err = why;
	return -1;
}

static int hex4(const char *p)
{
	for (int i = 0; i < 4; i++)
		if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
			return 0;
	return 1;
}

/* a string; *start and *len: its bytes between the quotes, escapes as they are */
static int string(struct jp *j, const char **start, size_t *len)
{
	if (*j->p != '"')
		return fail(j, "expected a string");
	*start = ++j->p;
	for (;;) {
		unsigned char c = *j->p;

		if (c == '"')
			break;
		if (c < 0x20)
			return fail(j, c ? "a control character inside a string" : "a string never ends");
		if (c == '\\') {
			c = *++j->p;
			if (c == 'u') {
				if (!hex4(j->p + 1))
					return fail(j, "a \\u escape without 4 hex digits");
				j->p += 4;
			} else if (!c || !strchr("\"\\/bfnrt", c)) {
				return fail(j, "an unknown escape in a string");
			}
		}
		j->p++;
	}
	*len = (size_t)(j->p - *start);
	j->p++;
	return 0;
}

static int digits(struct jp *j)
{
	const char *p = j->p;

	while (*j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > p ? 0 : fail(j, "a number without digits");
}

static int number(struct jp *j)
{
	if (*j->p == '-')
		j->p++;
	if (*j->p == '0')
		j->p++;
	else if (digits(j))
		return -1;
	if (*j->p == '.') {
		j->p++;
		if (digits(j))
			return -1;
	}
	if (*j->p == 'e' || *j->p == 'E') {
		j->p++;
		if (*j->p == '+' || *j->p == '-')
			j->p++;
		if (digits(j))
			return -1;
	}
	return 0;
}

static int object(struct jp *j, int depth)
{
	j->p++;
	ws(j);
	if (*j->p == '}') {
		j->p++;
		return 0;
	}
	for (;;) {
		const char *k, *v;
		size_t klen;

		ws(j);
		if (string(j, &k, &klen))
			return -1;
		ws(j);
		if (*j->p++ != ':')
			return fail(j, "expected ':' after a member's name");
		ws(j);
		v = j->p;
		if (value(j, depth + 1))
			return -1;
		if (depth == 1 && j->key && klen == strlen(j->key) && !memcmp(k, j->key, klen) &&
		    *v == '"') {
			j->val = v + 1;
			j->vlen = (size_t)(j->p - v) - 2;
		}
		ws(j);
		if (*j->p == '}') {
			j->p++;
			return 0;
		}
		if (*j->p++ != ',')
			return fail(j, "expected ',' or '}' in an object");
	}
}

static int array(struct jp *j, int depth)
{
	j->p++;
	ws(j);
	if (*j->p == ']') {
		j->p++;
		return 0;
	}
	for (;;) {
		ws(j);
		if (value(j, depth + 1))
			return -1;
		ws(j);
		if (*j->p == ']') {
			j->p++;
			return 0;
		}
		if (*j->p++ != ',')
			return fail(j, "expected ',' or ']' in a list");
	}
}

static int literal(struct jp *j, const char *word)
{
	size_t n = strlen(word);

	if (strncmp(j->p, word, n))
		return fail(j, "expected a value");
	j->p += n;
	return 0;
}

static int value(struct jp *j, int depth)
{
	const char *s;
	size_t n;

	if (depth > MAX_DEPTH)
		return fail(j, "nested too deeply");
	switch (*j->p) {
	case '{': return object(j, depth);
	case '[': return array(j, depth);
	case '"': return string(j, &s, &n);
	case 't': return literal(j, "true");
	case 'f': return literal(j, "false");
	case 'n': return literal(j, "null");
	default:
		if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
			return number(j);
		return fail(j, "expected a value");
	}
}

int js_check_object(const char *text, const char *key, const char **val, size_t *vlen,
		    char *why, size_t whylen)
{
	struct jp j = { .s = text, .p = text, .key = key };

	*val = NULL;
	*vlen = 0;
	ws(&j);
	if (*j.p != '{')
		j.err = "not a JSON object";
	else if (!value(&j, 1)) {
		ws(&j);
		if (*j.p)
			j.err = "more after the object";
	}
	if (j.err) {
		snprintf(why, whylen, "%s (at byte %zu)", j.err, (size_t)(j.p - j.s));
		return -1;
	}
	*val = j.val;
	*vlen = j.vlen;
	return 0;
}
