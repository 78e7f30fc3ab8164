"""userspace/writer.c and json.c driven by a small C program (built with
AddressSanitizer when the compiler has it): a disk that fills, an output path
that is not a regular file or is being read, text that is not UTF-8, NAT's
translations in the flow table (flows.c), and drain threads adding records
to lanes of their own (under ThreadSanitizer)."""
import json
import mmap
import os
import subprocess
import warnings

import numpy as np
import pytest

import charness
import hopscope
from hopscope.record import columns
from hopscope.record import format as fmt


PROGRAM = r"""
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "json.h"
#include "columns.h"
#include "writer.h"

static struct hs_writer w;
static unsigned long long received;

static void fill(struct hs_record *r, __u32 i, __u8 status)
{
	memset(r, 0, sizeof(*r));
	r->saddr[0] = 0x01011262 + (i % 50);
	r->daddr[0] = 0x02031262;
	r->proto = 17;
	r->status = status;
	r->t[HS_T1] = 1000 + i;
	if (status == HS_ST_COMPLETE)
		r->t[HS_T2] = r->t[HS_T1] + 1, r->t[HS_T3] = r->t[HS_T1] + 2,
		r->t[HS_T4] = r->t[HS_T1] + 3;
	r->seq = hs_seq(0, i + 1);
}

static int add(__u32 i, __u8 status)
{
	struct hs_record r;

	fill(&r, i, status);
	received++;
	return hs_writer_add(&w, &r);
}

static const char *counts(const char *stop)
{
	static char buf[512];
	struct hs_tally t;
	uint64_t written, not_stored;

	hs_writer_tally(&w, &t, &written, &not_stored);
	snprintf(buf, sizeof(buf), "{\"userspace\":{\"records_written\":%llu,"
		 "\"records_not_stored\":%llu,\"records_by_status\":{\"complete\":%llu,"
		 "\"inflight\":%llu},\"t4_unseen\":%llu}%s%s%s}", (unsigned long long)written,
		 (unsigned long long)not_stored,
		 (unsigned long long)t.by_status[HS_ST_COMPLETE],
		 (unsigned long long)t.by_status[HS_ST_INFLIGHT],
		 (unsigned long long)t.t4_unseen, stop ? ",\"stop_reason\":\"" : "",
		 stop ? stop : "", stop ? "\"" : "");
	return buf;
}

/* lanes: each thread adds its own records to its lane, as a drain thread */
struct lane_run {
	pthread_t thread;
	int k, n, err;
};

static void *lane_main(void *arg)
{
	struct lane_run *lr = arg;
	struct hs_lane *l = &w.lane[lr->k];

	/* batches, as a drain; flows shared with the other lanes, and some of
	 * this lane's own; every 7th packet left inside, a later one of its
	 * flow complete: judged t4_unseen in this lane */
	for (int i = 0; i < lr->n && !lr->err; i += 100) {
		hs_lane_lock(l);
		for (int j = i; j < i + 100 && j < lr->n && !lr->err; j++) {
			struct hs_record r;

			fill(&r, j, j % 7 == 3 ? HS_ST_INFLIGHT : HS_ST_COMPLETE);
			r.saddr[1] = lr->k * (j % 3);	/* 0: a flow every lane has */
			lr->err = hs_lane_add(l, &r);
		}
		hs_lane_unlock(l);
	}
	return NULL;
}

static int lanes(const char *path, int nlanes, int n)
{
	struct lane_run lr[HS_MAX_LANES];
	int err = 0;

	if (hs_writer_open(&w, path, "{\"format\":\"hopscope-record\"}", nlanes))
		return 1;
	for (int k = 0; k < nlanes; k++) {
		lr[k] = (struct lane_run){ .k = k, .n = n };
		if (pthread_create(&lr[k].thread, NULL, lane_main, &lr[k]))
			return 1;
	}
	/* the recorder's tick meanwhile: COUNTERS chunks with the lanes held */
	for (int i = 0; i < 50; i++) {
		hs_writer_hold(&w);
		err = err ?: hs_writer_flush(&w, counts(NULL));
		hs_writer_release(&w);
		nanosleep(&(struct timespec){ 0, 200000 }, NULL);
	}
	/* the lanes' counts, read while they add (as --count does) */
	printf("%llu ", (unsigned long long)hs_writer_complete(&w));
	for (int k = 0; k < nlanes; k++) {
		pthread_join(lr[k].thread, NULL);
		err = err ?: lr[k].err;
	}
	hs_writer_merge_lanes(&w);
	err = err ?: hs_writer_sync(&w) ?: hs_writer_close(&w, counts("signal"));
	printf("%d %llu %u\n", err, (unsigned long long)w.written, w.flows.n);
	hs_writer_free(&w);
	return 0;
}

static int full(const char *path, long limit, int n, int inflight)
{
	struct rlimit rl = { limit, limit };
	int err = 0, first_err = 0;

	signal(SIGXFSZ, SIG_IGN);	/* EFBIG rather than death */
	if (setrlimit(RLIMIT_FSIZE, &rl))
		return 3;
	if (hs_writer_open(&w, path, "{\"format\":\"hopscope-record\"}", 1))
		return 1;
	/* the poll loop: stops adding at the first error, as record.c does */
	for (int i = 0; i < n && !err; i++) {
		err = add(i, HS_ST_COMPLETE);
		if (!err && i % 20000 == 19999)
			err = hs_writer_flush(&w, counts(NULL));
	}
	first_err = err;
	/* the stop path: the ring's rest and the inflight ones, every one handed
	 * over; then the counts final (the writing thread's error, if the loop
	 * did not see it) for END */
	for (int i = 0; i < inflight; i++)
		add(n + i, HS_ST_INFLIGHT);
	err = hs_writer_sync(&w);
	first_err = first_err ?: err;
	err = hs_writer_close(&w, counts(first_err ? "error" : "signal"));
	printf("%llu %llu %llu %d %d\n", received, (unsigned long long)w.written,
	       (unsigned long long)w.not_stored, first_err, err);
	hs_writer_free(&w);
	return 0;
}

static int text(const char *path)
{
	struct js j;
	static const char *vals[] = {
		"plain", "caf\xe9.hsr", "\xc3\xa9t\xc3\xa9", "cut \xe2\x82", "\xed\xa0\x80 surrogate",
		"\xf4\x90\x80\x80 past U+10FFFF", "\xc0\xaf overlong", "q\"b\\\x01\x7f", "\xff",
	};

	js_init(&j);
	js_open(&j, NULL, '{');
	js_open(&j, "strings", '[');
	for (unsigned i = 0; i < sizeof(vals) / sizeof(*vals); i++) {
		js_open(&j, NULL, '{');
		js_str(&j, "v", vals[i]);
		js_close(&j, '}');
	}
	js_close(&j, ']');
	/* "\xe2\x82\xac" is 3 bytes: a cut at 2..4 keeps whole characters */
	js_u64(&j, "cut2", js_utf8_cut("ab\xe2\x82\xac", 2));
	js_u64(&j, "cut3", js_utf8_cut("ab\xe2\x82\xac", 3));
	js_u64(&j, "cut4", js_utf8_cut("ab\xe2\x82\xac", 4));
	js_u64(&j, "cut5", js_utf8_cut("ab\xe2\x82\xac", 5));
	js_close(&j, '}');
	FILE *f = fopen(path, "w");
	fputs(js_text(&j), f);
	fclose(f);
	js_free(&j);
	return 0;
}

static void tuple(struct hs_tuple *t, __u32 saddr)
{
	memset(t, 0, sizeof(*t));
	t->family = 4;
	t->proto = 17;
	t->saddr[0] = saddr;
	t->daddr[0] = 0x02031262;
}

/* a translation of the flow from saddr as one of the recorder's polls finds it */
static int file(__u32 saddr, __u32 to, __u64 packets, __u64 changes, bool final, bool add)
{
	struct hs_nat n = { .packets = packets, .changes = changes };
	struct hs_tuple from;

	tuple(&from, saddr);
	tuple(&n.to, to);
	return hs_flows_nat(&w.flows, &from, &n, final, add);
}

/* 2000 flows (the table grows past its first 1024), translations filed as
 * the recorder's polls find them: new, again, changed, unknown, and final */
static int nat(const char *path)
{
	const __u32 flow0 = 0x0a000000, flow1500 = 0x0a000000 + 1500, none = 0x0b000000;
	struct hs_record r;
	int err;

	if (hs_writer_open(&w, path, "{\"format\":\"hopscope-record\",\"nat_translations\":true}",
			   1))
		return 1;
	for (__u32 i = 0; i < 2000; i++) {
		memset(&r, 0, sizeof(r));
		r.saddr[0] = flow0 + i;
		r.daddr[0] = 0x02031262;
		r.proto = 17;
		r.status = HS_ST_COMPLETE;
		r.t[HS_T1] = 1000 + i, r.t[HS_T2] = 1001 + i, r.t[HS_T3] = 1002 + i, r.t[HS_T4] = 1003 + i;
		r.seq = hs_seq(0, i + 1);
		hs_writer_add(&w, &r);
	}
	/* more packets, same tuple: nothing new before the stop */
	err = file(flow0, 0x01030000, 1, 0, false, true) ?:
	      file(flow0, 0x01030000, 5, 0, false, true) ?:
	      hs_writer_flush(&w, counts(NULL)) ?:
	      file(flow1500, 0x01030001, 1, 0, false, true) ?:
	      file(flow0, 0x01030002, 7, 1, false, true) ?:
	      /* no record: kept only where flows are added */
	      file(none, 0x01030002, 7, 0, true, false) ?:
	      file(none, 0x01030002, 7, 0, false, true) ?:
	      /* the stop: the final counts, where they grew */
	      file(flow1500, 0x01030001, 1, 0, true, true) ?:
	      file(flow0, 0x01030002, 9, 1, true, true) ?:
	      hs_writer_sync(&w) ?:
	      hs_writer_close(&w, counts("signal"));
	printf("%d %u %u %u %u\n", err, w.flows.nat_n, w.flows.nat_flows, w.flows.nat_changed,
	       w.flows.n);
	hs_writer_free(&w);
	return 0;
}

/* records through hs_columns_encode and back through hs_columns_decode (the
 * QEMU guest's reader): the same bytes but reserved; a damaged length refused */
static int roundtrip(int n)
{
	struct hs_record *r = calloc(n, sizeof(*r)), *back = calloc(n, sizeof(*r));
	void *out = malloc(hs_columns_bound(n));
	size_t bytes;
	int bad = 0;

	for (int i = 0; i < n; i++) {
		fill(&r[i], i, i % 5 ? HS_ST_COMPLETE : HS_ST_INFLIGHT);
		r[i].tos = i % 7;
		r[i].sport = 40000 + i % 13;
		r[i].daddr[3] = i;
		r[i].segs = i % 3 ? 0 : 2;
		r[i].t[HS_T0] = i % 4 ? 0 : r[i].t[HS_T1] - 5;	/* before t1: negative */
	}
	bytes = hs_columns_encode(r, n, out);
	if (!bytes || hs_columns_decode(out, bytes, n, back) ||
	    !hs_columns_decode(out, bytes - 8, n, back))
		return 1;
	hs_columns_decode(out, bytes, n, back);
	for (int i = 0; i < n; i++)
		bad += memcmp(&r[i], &back[i], offsetof(struct hs_record, reserved)) != 0;
	printf("%d %zu\n", bad, bytes);
	return 0;
}

int main(int argc, char **argv)
{
	if (!strcmp(argv[1], "roundtrip"))
		return roundtrip(atoi(argv[2]));
	if (!strcmp(argv[1], "full"))
		return full(argv[2], atol(argv[3]), atoi(argv[4]), atoi(argv[5]));
	if (!strcmp(argv[1], "text"))
		return text(argv[2]);
	if (!strcmp(argv[1], "nat"))
		return nat(argv[2]);
	if (!strcmp(argv[1], "lanes"))
		return lanes(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(argv[1], "far")) {	/* n records, record 1's t4 2^31 ns after t1 */
		if (hs_writer_open(&w, argv[2], "{\"format\":\"hopscope-record\"}", 1))
			return 1;
		for (int i = 0; i < atoi(argv[3]); i++) {
			struct hs_record r;

			fill(&r, i, HS_ST_COMPLETE);
			r.t[HS_T4] += i == 1 ? 1ull << 31 : 0;
			hs_writer_add(&w, &r);
		}
		return hs_writer_sync(&w) || hs_writer_close(&w, counts("signal")) ? 1 : 0;
	}
	if (!strcmp(argv[1], "stall")) {	/* a disk that stops taking writes */
		int p[2], backed, err;

		if (pipe(p) || hs_writer_open(&w, argv[2], "{\"format\":\"hopscope-record\"}", 1) ||
		    dup2(p[1], w.fd) < 0)	/* a pipe no one reads: the I/O thread blocks */
			return 1;
		for (int i = 0; i < HS_WRITE_QUEUE_CHUNKS * HS_CHUNK_RECORDS_MAX + 100; i++)
			if (add(i, HS_ST_COMPLETE))
				return 1;
		alarm(10);	/* a flush that waits for the disk never returns */
		hs_writer_hold(&w);
		backed = hs_writer_backed_up(&w);
		err = hs_writer_flush(&w, counts(NULL));
		hs_writer_release(&w);
		alarm(0);
		printf("%d %d\n", backed, err);
		fflush(stdout);
		_exit(0);	/* the I/O thread is still blocked */
	}
	if (!strcmp(argv[1], "open")) {	/* a file with n records, nothing else */
		if (hs_writer_open(&w, argv[2], "{\"format\":\"hopscope-record\"}", 1))
			return 1;
		for (int i = 0; i < atoi(argv[3]); i++)
			add(i, HS_ST_COMPLETE);
		return hs_writer_sync(&w) || hs_writer_close(&w, counts("signal")) ? 1 : 0;
	}
	return 2;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    return charness.build(tmp_path_factory, "writer", PROGRAM,
                          ["writer.c", "columns.c", "flows.c", "json.c"], ["-ldeflate"],
                          sanitize=True)


@pytest.fixture(scope="module")
def harness_tsan(tmp_path_factory):
    return charness.build(tmp_path_factory, "writer-tsan", PROGRAM,
                          ["writer.c", "columns.c", "flows.c", "json.c"], ["-ldeflate"],
                          sanitize="thread")


def _run(exe, *args, **kw):
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:exitcode=99")
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True,
                          timeout=60, env=env, **kw)


FULL_N, FULL_INFLIGHT = 150_000, 70_000


@pytest.fixture(scope="module")
def full_size(harness, tmp_path_factory):
    """The bytes of the full test's file when the disk has room: the chunks'
    sizes depend on how records are encoded, the places the disk fills do not."""
    path = tmp_path_factory.mktemp("full") / "whole.hsr"
    out = _run(harness, "full", path, 1 << 40, FULL_N, FULL_INFLIGHT)
    assert out.returncode == 0 and out.stdout.split()[2:] == ["0", "0", "0"], out
    return os.path.getsize(path)


# where the disk fills, as a share of the whole file: in the first chunk, in
# the poll loop's chunks, and late (the END chunk fits after the cut)
@pytest.mark.parametrize("share", [0.03, 0.12, 0.27])
def test_full_disk_counts_every_record_and_keeps_the_file_whole(harness, full_size, tmp_path,
                                                                 share):
    """Issue 14 item 5: a chunk write that fails left nbuf at its maximum and the
    stop path wrote past the buffer (AddressSanitizer: heap-buffer-overflow).
    Now every record received is either in the file or counted not stored, and
    the file is whole up to its last chunk, with an END chunk when one fits."""
    path = tmp_path / "full.hsr"
    n, inflight, limit = FULL_N, FULL_INFLIGHT, int(full_size * share)
    out = _run(harness, "full", path, limit, n, inflight)
    assert out.returncode == 0, out.stderr
    assert "ERROR: AddressSanitizer" not in out.stderr and "runtime error" not in out.stderr
    received, written, not_stored, first_err, err = map(int, out.stdout.split())
    assert received == n + inflight or (first_err and received < n + inflight)
    assert written + not_stored == received
    assert first_err < 0 and not_stored > 0 and err < 0
    assert f"WARNING: {not_stored} records were not stored" in out.stderr
    assert os.path.getsize(path) <= limit
    rf = hopscope.RecordFile(path)
    assert rf.n_records == written
    # cut back to whole chunks: nothing wrong but a missing END or, in the END, the loss
    assert rf.problems, "the loss must show"
    assert all("no END chunk" in p or f"could not store {not_stored} records" in p
               for p in rf.problems), rf.problems
    if rf.trailer is not None:  # the END chunk fitted after the cut
        assert rf.trailer["userspace"]["records_not_stored"] == not_stored
        assert rf.trailer["stop_reason"] == "error"


@pytest.mark.parametrize("limit", [4 << 20, 64 << 20])
def test_the_writing_thread_shares_nothing_unguarded(harness_tsan, tmp_path, limit):
    """Chunks are written by a thread of their own while records come in:
    ThreadSanitizer sees every access the two make to the writer, through a
    run that fills its disk and one that does not; the counts still add up."""
    out = _run(harness_tsan, "full", tmp_path / "t.hsr", limit, 300_000, 70_000)
    assert out.returncode == 0 and "ThreadSanitizer" not in out.stderr, out.stderr[-3000:]
    received, written, not_stored, first_err, err = map(int, out.stdout.split())
    assert written + not_stored == received
    assert hopscope.RecordFile(tmp_path / "t.hsr").n_records == written
    assert (not_stored > 0) == (limit == 4 << 20), out.stdout


def test_counters_never_wait_for_the_disk(harness, tmp_path):
    """The 1-s tick holds every lane while it queues a COUNTERS chunk: with
    the disk behind (the write queue full, its I/O thread blocked), the
    queueing must not wait for room, or the drains stop with it."""
    out = _run(harness, "stall", tmp_path / "s.hsr")
    assert out.returncode == 0 and out.stdout.split() == ["1", "0"], out


def test_output_over_a_file_being_read(harness, tmp_path):
    """record -o over a file another process has mapped: the old file is replaced
    by a rename, never truncated under the reader (which got SIGBUS)."""
    path = tmp_path / "run.hsr"
    assert _run(harness, "open", path, 5000).returncode == 0
    old = path.read_bytes()
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert _run(harness, "open", path, 10).returncode == 0
        assert m[len(old) - 100:] == old[-100:]  # still readable: no SIGBUS
    assert hopscope.RecordFile(path).n_records == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.hsr"]  # no temp file left


def test_output_fifo_is_refused(harness, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out = _run(harness, "open", fifo, 1)  # hung in open() before
    assert out.returncode == 1 and "not a regular file" in out.stderr


def test_text_that_is_not_utf8_is_valid_json(harness, tmp_path):
    out = tmp_path / "t.json"
    assert _run(harness, "text", out).returncode == 0
    raw = out.read_bytes()
    raw.decode()  # valid UTF-8 whatever went in
    doc = json.loads(raw)
    got = [(s["v"], s.get("v_hex")) for s in doc["strings"]]
    assert got == [
        ("plain", None),
        ("caf\ufffd.hsr", b"caf\xe9.hsr".hex()),
        ("\u00e9t\u00e9", None),
        ("cut \ufffd\ufffd", b"cut \xe2\x82".hex()),
        ("\ufffd\ufffd\ufffd surrogate", b"\xed\xa0\x80 surrogate".hex()),
        ("\ufffd\ufffd\ufffd\ufffd past U+10FFFF", b"\xf4\x90\x80\x80 past U+10FFFF".hex()),
        ("\ufffd\ufffd overlong", b"\xc0\xaf overlong".hex()),
        ("q\"b\\\x01\x7f", None),
        ("\ufffd", "ff"),
    ]
    assert (doc["cut2"], doc["cut3"], doc["cut4"], doc["cut5"]) == (2, 2, 2, 5)


def test_nat_translations_new_changed_and_final(harness, tmp_path):
    path = tmp_path / "nat.hsr"
    out = _run(harness, "nat", path)
    assert out.returncode == 0 and "AddressSanitizer" not in out.stderr, out.stderr
    # items: flow 0 new, flow 1500 new, flow 0 changed, the unknown tuple
    # (added with its flow), flow 0's final count; flow 1500's count did not grow
    assert out.stdout.split() == ["0", "5", "3", "1", "2001"]
    rf = hopscope.RecordFile(path)
    assert [(int(i["id"]), int(i["kind"]), int(i["packets"])) for i in rf.nat] == \
        [(0, 1, 1), (1500, 1, 1), (0, 2, 7), (2000, 1, 7), (0, 2, 9)]
    assert len(rf.flows) == 2001 and not rf.problems
    with warnings.catch_warnings():  # the harness's records name no interface
        warnings.simplefilter("ignore", hopscope.RecordFileWarning)
        df = hopscope.load(path)
    assert not [p for p in df.attrs["problems"] if getattr(p, "kind", None) == "nat"]
    src = df.nat_src.astype(object)
    # network order: 0x01030001 in a little-endian word is 1.0.3.1
    assert src[df.flow == 1500].tolist() == ["1.0.3.1"] and src.notna().sum() == 1
    nat = {f["flow"]: f for f in df.attrs["nat"]["flows"]}
    assert nat[0]["changed"] and nat[0]["packets"] == 9 and nat[0]["to"][0] == "2.0.3.1"
    assert not nat[1500]["changed"] and nat[2000]["records"] == 0


@pytest.mark.parametrize("nlanes", [1, 4])
def test_lanes_share_the_file_and_the_flow_table(harness_tsan, tmp_path, nlanes):
    """Drain threads (--drain-threads) add records to lanes of their own while
    the recorder's tick holds them for COUNTERS chunks: ThreadSanitizer sees
    no unguarded access; every record is in the file once, under the id of
    its own 5-tuple in the one flow table, each flow's FLOWS chunk before
    its records, and every COUNTERS chunk's counts are those of the records
    before it (the invariants)."""
    n = 60_000
    out = _run(harness_tsan, "lanes", tmp_path / "l.hsr", nlanes, n)
    assert out.returncode == 0 and "ThreadSanitizer" not in out.stderr, out.stderr[-3000:]
    complete_then, err, written, nflows = map(int, out.stdout.split())
    second = {0} | {v for k in range(1, nlanes) for v in (k, 2 * k)}
    assert (err, written, nflows) == (0, nlanes * n, 50 * len(second))
    assert complete_then <= nlanes * (n - n // 7), complete_then
    rf = hopscope.RecordFile(tmp_path / "l.hsr")
    assert rf.n_records == written and not rf.problems, rf.problems
    assert len(rf.snapshots) == 50
    recs = np.concatenate(rf.records)
    flows = rf.flows[recs["flow"]]
    assert (flows["saddr"] == recs["saddr"]).all() and (flows["proto"] == 17).all()
    # a flow's FLOWS chunk comes before any record that names it
    defined, parts = 0, iter(rf.records)
    for c in rf.chunks:
        if c.type == fmt.CHUNK_FLOWS:
            defined += c.count
        elif c.type in fmt.RECORD_CHUNKS:
            assert int(next(parts)["flow"].max()) < defined
    assert defined == nflows
    # the chunks as columns, byte for byte as the reader's encoder makes them
    payloads = [c for c in rf.chunks if c.type in fmt.RECORD_CHUNKS]
    assert {c.type for c in payloads} == {fmt.CHUNK_COLUMNS}
    data = (tmp_path / "l.hsr").read_bytes()
    for c, part in zip(payloads, rf.records):
        assert data[c.payload:c.payload + c.nbytes] == columns.encode(np.asarray(part))


def test_an_instant_past_a_column_writes_records(harness, tmp_path):
    """A stage 2^31 ns or more after t1 does not fit an int32 column: that
    chunk is written as RECORDS, whole; the next one as COLUMNS again."""
    path = tmp_path / "far.hsr"
    out = _run(harness, "far", path, 65536 + 100)
    assert out.returncode == 0, out.stderr
    rf = hopscope.RecordFile(path)
    assert not rf.problems, rf.problems
    assert [c.type for c in rf.chunks if c.type in fmt.RECORD_CHUNKS] == \
        [fmt.CHUNK_RECORDS, fmt.CHUNK_COLUMNS]
    t = np.concatenate(rf.records)
    assert int(t["t4"][1] - t["t1"][1]) == 3 + (1 << 31) and (t["t4"] - t["t1"] == 3).sum() == \
        65536 + 99


def test_columns_decode_back_to_the_records(harness):
    """userspace/columns.c's decoder (the QEMU guest's readers use it) gives
    back every field the encoder took, left-out columns and stages before t1
    included, and refuses a payload whose length does not match."""
    out = _run(harness, "roundtrip", 5000)
    assert out.returncode == 0 and "AddressSanitizer" not in out.stderr, out.stderr
    bad, nbytes = map(int, out.stdout.split())
    assert bad == 0 and nbytes < 5000 * fmt.RECORD_SIZE
