/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The running kernel's names for its drop reasons. enum skb_drop_reason is
 * renumbered from one kernel to the next, so a record's number means
 * something only next to the table of the kernel that wrote it: it goes into
 * the file's header, read from the kernel's own BTF.
 */
#include <stdio.h>
#include <string.h>
#include <bpf/btf.h>
#include "dropreasons.h"

#define PREFIX "SKB_DROP_REASON_"

void hs_drop_reasons_json(struct js *j)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t = NULL;
	int id;

	if (btf) {
		id = btf__find_by_name_kind(btf, "skb_drop_reason", BTF_KIND_ENUM);
		t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	}
	if (!t) {	/* no BTF, or a kernel older than named drop reasons */
		js_raw(j, "drop_reasons", "null");
		btf__free(btf);
		return;
	}
	js_open(j, "drop_reasons", '{');
	for (int i = 0; i < btf_vlen(t); i++) {
		const struct btf_enum *e = btf_enum(t) + i;
		const char *name = btf__name_by_offset(btf, e->name_off);
		char key[16];

		if (!name || !strcmp(name, PREFIX "MAX"))
			continue;
		if (!strncmp(name, PREFIX, strlen(PREFIX)))
			name += strlen(PREFIX);
		snprintf(key, sizeof(key), "%u", (unsigned)e->val);
		js_str(j, key, name);
	}
	js_close(j, '}');
	btf__free(btf);
}
