"""What a record file says, checked against itself: docs/record-format.md,
"The file's invariants". A file can be intact (every CRC right) and still
say the impossible: a time past 2^63, a t4 on a dropped packet, an END that
counts other records than the file holds. Each class of violation found is
one Problem: a sentence of RecordFile.problems (a warning from load, exit 1
from verify) that also carries its class, its count and the first offending
record.

The per-record rules run inside the loader's fill (load.py), block by block
while the block is in cache, as a few numpy operations each; the rest once
per file.
"""
import numpy as np

from . import format as fmt
from . import header as h
from .columns import stage_times

# A pair of stamps read on two CPUs holds the offset between their clocks
# (docs/clock.md), and a record says the CPU of t1 and t4 only: t2 and t3
# run on another CPU under RPS, t0 on the sender's, t_tceg on whichever CPU
# resolved the neighbour. So every later stage may read up to this much
# before an earlier one; the kernel leaves the TSC as its clocksource only
# while the CPUs' offsets stay far below it. t1 and t4 of one CPU may not.
CROSS_CPU_NS = 1000
# The probes are attached before the header's clocks are read: the first
# packets may be stamped before start_monotonic_ns by the time that took
START_SLACK_NS = 60 * 10**9
MAX_SEGS = 0xffff  # gso_segs is 16 bits
# times at stages the header does not enable are looked for in every 16th record
OFF_SAMPLE = 16

_COMPLETE = fmt.STATUS["complete"]
_DROPPED = fmt.STATUS["dropped"]
_INFLIGHT = fmt.STATUS["inflight"]
_EVICTED = fmt.STATUS["evicted"]
_OTHER_OUT = fmt.STATUS["other_out"]
_PARTIAL = fmt.STATUS["partial"]
# statuses the kernel counts as it emits them (include/hopscope.h, kmod/counters.c);
# partial since it exists (a file before it has no such counter)
_COUNTED = ("complete", "dropped", "evicted", "other_out")
# path codes whose packets pass PRE_ROUTING and POST_ROUTING (t2, t3)
_STACK_LUT = np.array([name in fmt.STACK_PATHS for name in fmt.PATH_NAMES] + [True])
# drop reasons kfree_skb never reports: consume_skb has its own tracepoint
_NOT_DROPS = ("NOT_DROPPED_YET", "CONSUMED")


def _flag_lut():
    """flags values that no packet can have: an IPv6 extension header on
    IPv4, IPv4 options on IPv6"""
    v = np.arange(256)
    v6 = (v & h.F_IPV6) != 0
    return (((v & h.F_IPV6_EXT) != 0) & ~v6) | (((v & h.F_IPOPTS) != 0) & v6)


_BAD_FLAGS = _flag_lut()

# rule -> (class, what the count is of)
RULES = {
    "time_high": ("time", "records have a time of 2^63 ns or more (read as negative)"),
    "time_before": ("time", f"records have a time more than {START_SLACK_NS // 10**9} s "
                            "before the run's start (start_monotonic_ns)"),
    "time_after": ("time", "records have a time after the END chunk was written "
                           "(its monotonic_ns)"),
    "same_cpu": ("order", "records with t1 and t4 on one CPU have t4 before t1"),
    "complete": ("status", "complete records lack t1 or t4"),
    "path": ("status", "complete records lack a stage of their path (t2 and t3 on the stack "
                       "paths) or have one their path skips (t2 or t3 on a fast path), or "
                       "partial records have both t2 and t3 or neither"),
    "leave": ("status", "records have a t4 and an output interface other than their status "
                        "says: both on complete and other_out records, neither on others"),
    "drop_stage": ("status", "dropped records have a drop stage that is not their last "
                             "stage with a time"),
    "drop_reason": ("status", "dropped records have a drop reason the header's drop_reasons "
                              "does not name as a drop"),
    "t4_unseen": ("status", "records have the t4_unseen flag and are not inflight or "
                            "evicted records of a flow"),
    "segs": ("status", f"records have segs above {MAX_SEGS}, more wire packets than one "
                       "merged packet holds"),
    "pieces": ("status", "records have out_segs 1 (0: left whole, else 2 or more pieces), or "
                         "a t4_span_ns without pieces"),
    "family": ("status", "records have an IPv6 flag other than their flow's family, or "
                         "IPv4 options on IPv6 / IPv6 extension headers on IPv4"),
    "stage_off": ("header", f"records (of every {OFF_SAMPLE}th) have a time at a stage the "
                            "header's stages do not list (the column is not loaded)"),
    "in_if": ("header", "records have an input ifindex no interface of the header (or of "
                        "the trailer's ifaces) has"),
    "out_if": ("header", "complete records have an output ifindex no interface of the "
                         "header (or of the trailer's ifaces) has"),
}


_DELAYS = {name: (later, earlier) for name, later, earlier in fmt.DELAYS}


def _rule(key):
    """(class, what is counted) of a rule: RULES', or "order_" and a delay name"""
    if key in RULES:
        return RULES[key]
    name = key.removeprefix("order_")
    later, earlier = _DELAYS[name]
    return "order", (f"records have {later} more than {CROSS_CPU_NS} ns (and the clock's "
                     f"resolution) before {earlier} ({name} below 0)")


class Problem(str):
    """A sentence of RecordFile.problems that names a class of violation of
    the file's invariants: kind ("time", "order", "status", "header", "counts",
    "chunks", "nat": nat.py), count (None: the file as a whole), row and seq of the first
    offending record (None when not a record)."""

    def __new__(cls, text, kind, count=None, row=None, seq=None):
        self = super().__new__(cls, text)
        self.kind, self.count, self.row, self.seq = kind, count, row, seq
        return self

    def __getnewargs__(self):
        return str(self), self.kind, self.count, self.row, self.seq

    def as_dict(self):
        return {"kind": self.kind, "count": self.count, "row": self.row, "seq": self.seq,
                "message": str(self)}


def _record_problem(key, count, row, seq):
    kind, what = _rule(key)
    return Problem(f"{count} {what} (first: row {row}, seq {seq:#x})", kind, count, row, seq)


class Tally:
    """What the rules found in one chunk (filled in one thread), and what the
    counts of the END chunk are compared with."""

    def __init__(self):
        self.found = {}  # rule's key -> [count, first row, its seq]
        self.status = np.zeros(256, np.int64)  # rows by status code (value - 1)
        self.complete_path = np.zeros(256, np.int64)  # complete rows by path code + 1
        self.t4_unseen = 0

    def add(self, key, mask, row0, seq, rows=None):
        """Count the records of mask, a block's from row row0 on (or of those
        of its rows, when given); seq is theirs, as mask."""
        n = int(np.count_nonzero(mask))
        if n:
            i = int(np.argmax(mask))
            self._count(key, n, row0 + int(i if rows is None else rows[i]), int(seq[i]))

    def _count(self, key, n, row, seq):
        have = self.found.get(key)
        if have is None or row < have[1]:
            self.found[key] = [n + (have[0] if have else 0), row, seq]
        else:
            have[0] += n

    def merge(self, other):
        for key, (n, row, seq) in other.found.items():
            self._count(key, n, row, seq)
        self.status += other.status
        self.complete_path += other.complete_path
        self.t4_unseen += other.t4_unseen

    def problems(self):
        return [_record_problem(key, *v) for key, v in sorted(self.found.items(),
                                                              key=lambda kv: kv[1][1])]


class Rules:
    """The per-record rules of one file, with the bounds its header and END give."""

    def __init__(self, rf, times, delay_defs, if_lut):
        header = rf.header
        self.times, self.delay_defs = times, delay_defs
        # the stages not enabled, as columns of the records seen as 18 u64 each
        self.off = [i for i, t in enumerate(fmt.STAGE_NAMES) if t not in times]
        start = header.get("start_monotonic_ns")
        self.lo = max(start - START_SLACK_NS, 1) if isinstance(start, int) else 1
        end = (rf.trailer or {}).get("monotonic_ns")
        self.hi = end if isinstance(end, int) and end >= self.lo else (1 << 63) - 1
        clock = header.get("clock")
        res = clock.get("resolution_ns") if isinstance(clock, dict) else None
        self.tol = CROSS_CPU_NS + (res if type(res) is int and 0 < res < 10**9 else 0)
        self.check_if = bool(header.get("interfaces")) and len(if_lut) > 1
        self.family = np.append(rf.flows["family"], 0).astype(np.uint8)
        families = set(self.family[:-1].tolist())
        self.one_family = families.pop() if len(families) == 1 else None
        table = header.get("drop_reasons")
        self.reasons = None
        if isinstance(table, dict) and table:
            self.reasons = np.array(sorted(int(k) for k, v in table.items()
                                           if k.isdigit() and isinstance(v, str) and
                                           v.removeprefix("SKB_") not in _NOT_DROPS), np.int64)

    def block(self, tally, row0, col, zero, delays, codes, raw, family, scratch):
        """Apply every rule to one block of records: col their copied fields
        (segs as in the file), zero the stages not seen, delays and codes their
        columns, family their derived column, raw the records themselves (read
        for a few rows only: a field of every record is a pass over all);
        scratch a u64 array of the block's length."""
        seq = col["seq"]
        status = codes["status"]  # the value - 1: its code
        # a time read as negative makes its delays meaningless: counted once, as a time
        sane = self._times(tally, row0, col, seq, scratch)
        for name, later, earlier in self.delay_defs:
            d = delays[name]
            if np.fmin.reduce(d) < 0:  # NaN (a stage not seen) left out
                neg = d < 0
                tally.add(f"order_{name}", (d < -self.tol) & sane, row0, seq)
                if name == "transit":
                    tally.add("same_cpu", neg & sane & (col["cpu_in"] == col["cpu_out"]),
                              row0, seq)
        # most records are complete: each rule of theirs is one pass over the
        # block, its count less that of the other records (few) at rest
        rest = np.flatnonzero(status != _COMPLETE - 1)
        tally.status[_COMPLETE - 1] += len(status) - len(rest)
        self._complete(tally, row0, "complete", zero["t1"] | zero["t4"], rest, status, seq)
        # unknown path values (-1) are counted by load.py, and judged as stack here
        stack = _STACK_LUT[codes["path"]]
        paths = codes["path"].astype(np.intp) + 1
        tally.complete_path += np.bincount(paths, minlength=256) - \
            np.bincount(paths[rest], minlength=256)
        self._complete(tally, row0, "path", np.where(stack, zero["t2"] | zero["t3"],
                                                     ~(zero["t2"] & zero["t3"])),
                       rest, status, seq)
        if self.check_if:
            if codes["in_if"].min() < 0:
                tally.add("in_if", codes["in_if"] < 0, row0, seq)
            self._complete(tally, row0, "out_if", codes["out_if"] < 0, rest, status, seq)
        else:
            self._complete(tally, row0, "leave", col["out_ifindex"] == 0, rest, status, seq)
        known = status[rest]
        rest = rest[(known >= 0) & (known < len(fmt.STATUS_NAMES))]
        if len(rest):
            tally.status += np.bincount(status[rest], minlength=256)
            self._not_complete(tally, row0, col, zero, raw, rest, status[rest] + 1, seq)
        if col["segs"].max() > MAX_SEGS:
            tally.add("segs", col["segs"] > MAX_SEGS, row0, seq)
        if col["t4_span_ns"].any() or (col["out_segs"] == 1).any():
            tally.add("pieces", (col["out_segs"] == 1) |
                      ((col["t4_span_ns"] > 0) & (col["out_segs"] < 2)), row0, seq)
        flags = col["flags"]
        flagged = np.flatnonzero(flags >= h.F_T4_UNSEEN)
        tally.t4_unseen += len(flagged)
        if len(flagged):
            judged = (status[flagged] == _INFLIGHT - 1) | (status[flagged] == _EVICTED - 1)
            tally.add("t4_unseen", ~judged | (col["flow"][flagged] == fmt.FLOW_NONE),
                      row0, seq[flagged], flagged)
        self._family(tally, row0, col["flow"], flags, family, seq)
        if self.off:
            # every OFF_SAMPLEth record: a pass over a field not copied costs
            # as much as copying it
            t = stage_times(raw, slice(None, None, OFF_SAMPLE), self.off)
            if t.any():
                rows = np.arange(0, len(raw), OFF_SAMPLE)
                tally.add("stage_off", t.any(axis=1), row0, seq[rows], rows)

    @staticmethod
    def _complete(tally, row0, key, mask, rest, status, seq):
        """Count the complete records of mask (rest: the rows of the others)."""
        if np.count_nonzero(mask) > np.count_nonzero(mask[rest]):
            tally.add(key, mask & (status == _COMPLETE - 1), row0, seq)

    def _family(self, tally, row0, flow, flags, family, seq):
        bits = np.bitwise_or.reduce(flags)
        if bits & (h.F_IPV6_EXT | h.F_IPOPTS):  # rare: the records that have either
            rows = np.flatnonzero(flags & (h.F_IPV6_EXT | h.F_IPOPTS))
            tally.add("family", _BAD_FLAGS[flags[rows]], row0, seq[rows], rows)
        # most files' flows are of one family, and so are their records' flags
        if self.one_family == 4 and not bits & h.F_IPV6 or \
                self.one_family == 6 and (flags & h.F_IPV6).all():
            return
        fam = np.take(self.family, flow, mode="clip")  # 0: not in the flow table
        tally.add("family", (fam != family) & (fam != 0), row0, seq)

    def _times(self, tally, row0, col, seq, scratch):
        """Count the times out of bounds; True, or where no time is 2^63 or more."""
        # as unsigned, a time of 2^63 or more is past hi; 0 (not seen) - 1 is
        # past every bound: a few reductions per stage when every time is fine
        lo, hi, one = np.uint64(self.lo), np.uint64(self.hi), np.uint64(1)
        if all(u.max() <= hi and (u.min() >= lo or
                                  np.subtract(u, one, out=scratch).min() >= lo - one)
               for u in (col[t].view(np.uint64) for t in self.times)):
            return True
        high, before, after = (np.zeros(len(seq), bool) for _ in range(3))
        for t in self.times:
            v = col[t]
            high |= v < 0
            before |= (v > 0) & (v < self.lo)
            after |= v > self.hi
        tally.add("time_high", high, row0, seq)
        tally.add("time_before", before, row0, seq)
        tally.add("time_after", after, row0, seq)
        return ~high

    def _not_complete(self, tally, row0, col, zero, raw, rows, status, seq):
        """The rules of the records that are not complete, at rows (few), of
        these status values."""
        seq = seq[rows]
        t4 = ~zero["t4"][rows]
        out = col["out_ifindex"][rows] != 0
        other = (status == _OTHER_OUT) | (status == _PARTIAL)
        tally.add("leave", (t4 != other) | (out != other), row0, seq, rows)
        partial = np.flatnonzero(status == _PARTIAL)
        if len(partial):
            at = rows[partial]
            tally.add("path", zero["t2"][at] == zero["t3"][at], row0, seq[partial], at)
        dropped = np.flatnonzero(status == _DROPPED)
        if not len(dropped):
            return
        at = rows[dropped]
        # the last stage with a time: the enabled stages' from their copies,
        # only the others' read from the records
        seen = np.empty((len(at), len(fmt.STAGE_NAMES)), bool)
        for i, t in enumerate(fmt.STAGE_NAMES):
            if t in zero:
                np.logical_not(zero[t][at], out=seen[:, i])
        if self.off:
            seen[:, self.off] = stage_times(raw, at, self.off) != 0
        last = len(fmt.STAGE_NAMES) - 1 - np.argmax(seen[:, ::-1], axis=1)
        last[~seen.any(axis=1)] = 0
        stage = raw["drop_stage"][at]
        # a stage past the known ones is counted apart (load.py)
        tally.add("drop_stage", (stage != last) & (stage < len(fmt.STAGE_NAMES)), row0,
                  seq[dropped], at)
        if self.reasons is not None:
            ok = np.isin(col["drop_reason"][at], self.reasons)
            tally.add("drop_reason", ~ok, row0, seq[dropped], at)


def problems(rf, tallies, flow_none):
    """Every violation of the file's invariants: what the rules found in its
    records (tallies: each RECORDS chunk's, in file order), then the file as
    a whole: the header JSON against the binary header, the times of the
    COUNTERS and END chunks, their counts against the rows (flow_none: the
    rows without a flow)."""
    tally = Tally()
    for t in tallies:
        tally.merge(t)
    out = tally.problems()
    header = rf.header
    for key, binary in (("version", rf.version), ("record_size", rf.record_size)):
        v = header.get(key)
        if v is not None and v != binary:
            out.append(Problem(f"the header JSON says {key} {v}, the file header {binary}",
                               "header"))
    start = header.get("start_monotonic_ns")
    last = start if isinstance(start, int) else 0
    for c in rf.snapshots + ([rf.trailer] if rf.trailer else []):
        t = c.get("monotonic_ns")
        if isinstance(t, int) and t < last:
            out.append(Problem(f"a COUNTERS or END chunk was written at {t} ns, before the "
                               f"start or the chunk before it ({last} ns)", "time"))
            break
        last = t if isinstance(t, int) else last
    return out + _snapshot_counts(rf, tallies) + _end_counts(rf, tally, flow_none)


def _status_rows(status):
    return {name: int(status[v - 1]) for name, v in fmt.STATUS.items()}


def _snapshot_counts(rf, tallies):
    """Each COUNTERS chunk's records_by_status against the records before it
    (it is written right after them), up to the first that differs."""
    if rf.dropped_records:
        return []
    status, records, chunks = np.zeros(256, np.int64), 0, iter(tallies)
    snapshots = iter(rf.snapshots)
    for c in rf.chunks:
        if c.type in fmt.RECORD_CHUNKS:
            status += next(chunks).status
            records += c.count
        elif c.type == fmt.CHUNK_COUNTERS:
            user = next(snapshots).get("userspace") or {}
            said = user.get("records_by_status") or {}
            if user.get("records_not_stored") or user.get("records_written") != records:
                continue
            have = _status_rows(status)
            wrong = [k for k, v in said.items() if k in have and v != have[k]]
            if wrong:
                k = wrong[0]
                return [Problem(f"{c.describe()} says records_by_status.{k} {said[k]}, the "
                                f"records before it give {have[k]}", "counts",
                                abs(said[k] - have[k]))]
    return []


def _end_counts(rf, tally, flow_none):
    """END's counts against the rows, when the file holds every record the
    recorder was handed (a file not whole is a problem already)."""
    end = rf.trailer or {}
    user = end.get("userspace") or {}
    if (not end or rf.dropped_records or rf.truncated or user.get("records_not_stored")
            or not isinstance(user.get("records_written"), int)
            or user["records_written"] != rf.n_records):
        return []
    rows = _status_rows(tally.status)
    header = rf.header
    # a flight dump's END holds the run's counters; --aggregate writes no records
    whole_run = "flight_dump" not in header and header.get("histograms") != "aggregate"
    said = {f"records_by_status.{k}": (v, rows[k])
            for k, v in (user.get("records_by_status") or {}).items() if k in rows}
    said.update({f"complete_by_path.{p}": (v, int(tally.complete_path[fmt.PATH_NAMES.index(p) + 1]))
                 for p, v in (user.get("complete_by_path") or {}).items()
                 if p in fmt.PATH_NAMES})
    said.update({"flows": (user.get("flows"), len(rf.flows)),
                 "flow_overflow": (user.get("flow_overflow"), flow_none),
                 "t4_unseen": (user.get("t4_unseen"), tally.t4_unseen)})
    if whole_run:
        said["inflight_at_stop"] = (user.get("inflight_at_stop"), rows["inflight"])
        k = end.get("counters") or {}
        counted = _COUNTED + (("partial",) if "partial" in k else ())
        if all(isinstance(k.get(c), int) for c in counted + ("rb_fail", "rb_fail_complete")):
            # every record emitted is counted by status; those the ring had no room for
            # in rb_fail (complete ones also in rb_fail_complete)
            said["counters.complete - rb_fail_complete"] = (
                k["complete"] - k["rb_fail_complete"], rows["complete"])
            said["counters " + " + ".join(counted) + " - rb_fail"] = (
                sum(k[c] for c in counted) - k["rb_fail"], sum(rows[c] for c in counted))
    return [Problem(f"the END chunk says {key} {v}, the file's records give {have}",
                    "counts", abs(v - have))
            for key, (v, have) in said.items() if isinstance(v, int) and v != have]
