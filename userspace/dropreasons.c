/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The running kernel's names for its drop reasons. enum skb_drop_reason is
 * renumbered from one kernel to the next, so a record's number means
 * something only next to the table of the kernel that wrote it: it goes into
 * the file's header, read from the kernel's own BTF.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <bpf/btf.h>
#include "dropreasons.h"

#define PREFIX "SKB_DROP_REASON_"

/* the enum in the kernel's BTF (*btf to free), NULL: none (no BTF, or a
 * kernel older than named drop reasons) */
static const struct btf_type *reasons(struct btf **btf)
{
	int id;

	*btf = btf__load_vmlinux_btf();
	if (!*btf)
		return NULL;
	id = btf__find_by_name_kind(*btf, "skb_drop_reason", BTF_KIND_ENUM);
	return id > 0 ? btf__type_by_id(*btf, id) : NULL;
}

/* the i-th reason's name without PREFIX; NULL: not a reason (the MAX mark) */
static const char *reason_name(const struct btf *btf, const struct btf_type *t, int i)
{
	const char *name = btf__name_by_offset(btf, btf_enum(t)[i].name_off);

	if (!name || !strcmp(name, PREFIX "MAX"))
		return NULL;
	return strncmp(name, PREFIX, strlen(PREFIX)) ? name : name + strlen(PREFIX);
}

void hs_drop_reasons_json(struct js *j)
{
	struct btf *btf;
	const struct btf_type *t = reasons(&btf);

	if (!t) {
		js_raw(j, "drop_reasons", "null");
		btf__free(btf);
		return;
	}
	js_open(j, "drop_reasons", '{');
	for (int i = 0; i < btf_vlen(t); i++) {
		const char *name = reason_name(btf, t, i);
		char key[16];

		if (!name)
			continue;
		snprintf(key, sizeof(key), "%u", (unsigned)btf_enum(t)[i].val);
		js_str(j, key, name);
	}
	js_close(j, '}');
	btf__free(btf);
}

long hs_drop_reason_value(const char *name)
{
	struct btf *btf;
	const struct btf_type *t = reasons(&btf);
	long v = t ? -1 : -2;

	if (!strncasecmp(name, PREFIX, strlen(PREFIX)))
		name += strlen(PREFIX);
	for (int i = 0; t && i < btf_vlen(t) && v < 0; i++) {
		const char *n = reason_name(btf, t, i);

		if (n && !strcasecmp(n, name))
			v = btf_enum(t)[i].val;
	}
	btf__free(btf);
	return v;
}
