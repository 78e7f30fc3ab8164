/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The record file (.hsr), version 3. docs/record-format.md is the prose;
 * this is the layout. Little-endian, every part a multiple of 8 bytes so
 * record arrays are aligned wherever the file is mapped.
 *
 *   hs_file_header | header JSON (padded with spaces to 8) | chunk* | END chunk
 *   chunk = hs_chunk | payload (bytes, padded with zeros to 8)
 *
 * A run that was killed has no END chunk: readers keep every whole chunk and
 * say where the file stops being whole.
 *
 * Constants keep the line form described at the top of hopscope.h.
 */
#ifndef HOPSCOPE_FILE_H
#define HOPSCOPE_FILE_H

#include "hopscope.h"

#define HS_FILE_MAGIC "HOPSCOPE"
#define HS_FILE_VERSION 3
#define HS_ENDIAN_MARK 0x01020304u
#define HS_CHUNK_MAGIC 0x4b435348u	/* "HSCK" */
/* the "format" of a `hopscope calibrate` file, which --calibration copies
 * into the header as "calibration" (docs/accuracy.md) */
#define HS_CALIBRATION_FORMAT "hopscope-calibration"

struct hs_file_header {
	char magic[8];
	__u32 version;
	__u32 record_size;	/* sizeof(struct hs_record) */
	__u32 header_bytes;	/* JSON length, padding included */
	__u32 endian;		/* HS_ENDIAN_MARK as written */
	/* version 2 on; version 1 headers end here (24 bytes) and have no CRC */
	__u32 header_crc32;	/* zlib crc32 of bytes 0..23, then of the header JSON with its padding */
	__u32 reserved;
};

enum hs_chunk_type {
	HS_CHUNK_RECORDS = 1,	/* count x struct hs_record */
	HS_CHUNK_FLOWS = 2,	/* count x struct hs_flow, before the first record naming them */
	HS_CHUNK_COUNTERS = 3,	/* JSON snapshot of every counter, written at each flush */
	HS_CHUNK_END = 4,	/* JSON trailer: final counters, stop time, why it stopped */
	HS_CHUNK_COLUMNS = 5,	/* version 3: count records as columns (below) */
};

/*
 * A COLUMNS chunk holds count records a column at a time, the records'
 * fields in the order of HS_COLUMN_LIST (VALUE: bytes a record, little-endian):
 *
 *   __u64 present (bit i: column i is stored) | each stored column: count x
 *   its bytes, padded with zeros to 8
 *
 * A column left out is 0 in every record. t1 is stored whole; every other
 * stage as its instant minus t1 in an __s32, HS_COLUMN_UNSEEN for 0 (not
 * seen). reserved is not stored. The recorder writes a RECORDS chunk instead
 * when an instant does not fit (t1 0 beside another stage, or more than
 * 2^31 - 1 ns from t1). Columns make a record 46-87 bytes in the files
 * measured (evaluation/measurements.md), and let a reader copy each field
 * out in one pass (docs/record-format.md).
 */
#define HS_COLUMN_UNSEEN 0x80000000u
#define HS_COLUMN_LIST(X) \
	X(HS_COL_T1, 8, "t1") \
	X(HS_COL_T0, 4, "t0") \
	X(HS_COL_TCIN, 4, "t_tcin") \
	X(HS_COL_T2, 4, "t2") \
	X(HS_COL_FWD, 4, "t_fwd") \
	X(HS_COL_T3, 4, "t3") \
	X(HS_COL_TCEG, 4, "t_tceg") \
	X(HS_COL_T4, 4, "t4") \
	X(HS_COL_SEQ, 8, "seq") \
	X(HS_COL_KEY, 4, "key") \
	X(HS_COL_DROP_REASON, 4, "drop_reason") \
	X(HS_COL_IN_IFINDEX, 4, "in_ifindex") \
	X(HS_COL_OUT_IFINDEX, 4, "out_ifindex") \
	X(HS_COL_FLOW, 4, "flow") \
	X(HS_COL_IP_LEN, 2, "ip_len") \
	X(HS_COL_SPORT, 2, "sport") \
	X(HS_COL_DPORT, 2, "dport") \
	X(HS_COL_CPU_IN, 2, "cpu_in") \
	X(HS_COL_CPU_OUT, 2, "cpu_out") \
	X(HS_COL_TOS, 1, "tos") \
	X(HS_COL_PROTO, 1, "proto") \
	X(HS_COL_STATUS, 1, "status") \
	X(HS_COL_DROP_STAGE, 1, "drop_stage") \
	X(HS_COL_FLAGS, 1, "flags") \
	X(HS_COL_PATH, 1, "path") \
	X(HS_COL_SADDR0, 4, "saddr0") \
	X(HS_COL_SADDR1, 4, "saddr1") \
	X(HS_COL_SADDR2, 4, "saddr2") \
	X(HS_COL_SADDR3, 4, "saddr3") \
	X(HS_COL_DADDR0, 4, "daddr0") \
	X(HS_COL_DADDR1, 4, "daddr1") \
	X(HS_COL_DADDR2, 4, "daddr2") \
	X(HS_COL_DADDR3, 4, "daddr3") \
	X(HS_COL_SEGS, 4, "segs") \
	X(HS_COL_TUN_IN_NS, 4, "tun_in_ns") \
	X(HS_COL_TUN_OUT_NS, 4, "tun_out_ns") \
	X(HS_COL_T4_SPAN_NS, 4, "t4_span_ns") \
	X(HS_COL_OUT_SEGS, 2, "out_segs")
/* each column's bytes a record */
enum hs_column_bytes { HS_COLUMN_LIST(HS_X_ENUM_VALUE) };

struct hs_chunk {
	__u32 magic;		/* HS_CHUNK_MAGIC */
	__u32 type;		/* enum hs_chunk_type */
	__u32 count;		/* items in the payload (0 for JSON chunks) */
	__u32 bytes;		/* payload bytes before padding */
	__u32 crc32;		/* zlib crc32 of those bytes */
	__u32 index;		/* version 2: chunks numbered 0, 1, ... in file order (version 1: 0) */
};

/* hs_record.flow of a record whose 5-tuple did not fit the recorder's flow
 * table (counted in the trailer's userspace.flow_overflow) */
#define HS_FLOW_NONE 0xffffffffu

/* hs_flow.kind: a flow records name, or the tuple NAT made of flow `id`
 * (ids are the flows' alone; a translation item takes none) */
#define HS_FLOW_TUPLE 0
#define HS_FLOW_NAT 1
/* a translation of a flow whose translation changed during the run, at least
 * once before this item was written: which tuple a record had is unknown */
#define HS_FLOW_NAT_CHANGED 2

/* One 5-tuple; records name it by hs_record.flow. A flow's translation may
 * come in later chunks than the flow, and again when it grew or changed: the
 * last item of an id counts. */
struct hs_flow {
	__u32 id;
	__u8 family;		/* 4 or 6 */
	__u8 proto;
	__u16 kind;		/* HS_FLOW_TUPLE (0 in files before translations) */
	__u16 sport;		/* host order */
	__u16 dport;
	__u32 saddr[4];		/* network order */
	__u32 daddr[4];
	__u32 packets;		/* translation: packets t3 saw it on so far (saturates); else 0 */
};

#endif
