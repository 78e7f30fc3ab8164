"""A record file as a pandas DataFrame, one row per packet.

Columns are pulled out of the memory-mapped records a block at a time, so
each block's 144-byte records are read from memory once and every column is
then copied from cache; pandas gets one array per column (no consolidation).
"""
import ipaddress
import os
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from . import format as fmt
from .format import DELAYS
from . import calibration, hist, invariants, nat, sampling
from .columns import Columns
from .invariants import Rules, Tally
from .probecost import check, delay_floors, floor_problems, stage_costs
from .reader import RecordFile, RecordFileError, RecordFileWarning

# record fields copied as they are, in column order
PLAIN = ("drop_reason", "flags", "tos", "proto", "sport", "dport", "flow",
         "in_ifindex", "out_ifindex", "cpu_in", "cpu_out", "ip_len", "key", "seq", "segs",
         "out_segs", "t4_span_ns", "tun_in_ns", "tun_out_ns")
COLUMN_ORDER = (
    "status", "path", "drop_reason", "drop_stage", "flags", "tos", "dscp", "proto", "family",
    "src", "dst", "sport", "dport", "flow", "in_ifindex", "out_ifindex", "in_if", "out_if",
    "cpu_in", "cpu_out", "cross_cpu", "ip_len", "segs", "out_segs", "t4_span_ns",
    "tun_in_ns", "tun_out_ns", "key", "seq")

_DROPPED = fmt.STATUS["dropped"] - 1  # its status code
_COMPLETE = fmt.STATUS["complete"] - 1

UNKNOWN = "unknown"
# the header's "clock" facts (docs/record-format.md) and the type each must have
CLOCK_FACTS = {"clocksource": str, "available_clocksources": list, "constant_tsc": bool,
               "nonstop_tsc": bool, "stamp_clock": str, "stamp_read": str,
               "resolution_ns": int, "user_read_cost_ns": int, "user_read_cost_reads": int,
               "boot_id": str, "realtime_sync": dict, "mono_to_realtime_err_ns": int}
# the members of "clock"'s realtime_sync, each of which it must have
REALTIME_SYNC = {"synced": bool, "maxerror_ns": int, "esterror_ns": int, "status": int,
                 "tai_offset_s": int}
_X86 = ("x86_64", "i386", "i486", "i586", "i686")

# Records per block, and chunks filled at once (at most one per CPU). One
# thread was fastest at 8192 (bigger blocks fall out of cache, smaller ones
# pay numpy's per-call cost); two threads at 32768, where each holds the GIL
# between numpy's calls less often: 10 M records 0.23-0.27 s warm, against
# 0.35-0.37 s for one thread at 8192 (evaluation/measurements.md)
BLOCK = 32768
THREADS = 2


def load(path, verify=True, strict=False, less_probe=False):
    """Load a record file (.hsr) into a DataFrame; see docs/record-format.md.

    verify: check the header's and every chunk's CRC32 (the default). A chunk
    that fails it is left out and its records counted in
    df.attrs["dropped_records"]; a header that fails it raises RecordFileError.
    verify=False skips the checks: damaged bytes then load as if whole.
    strict: raise RecordFileError when any part of the file is not whole or
    not intact; by default every whole chunk is loaded, a RecordFileWarning
    says what was not, and df.attrs["truncated"] is set.
    less_probe: add, for each delay with a probe floor, a float column
    DELAY_less_probe: the delay minus the mean time the probes spent inside
    it (df.attrs["probe_floor"], mean_ns); an estimate of what the delay
    would have been untraced, per packet only on average.
    df.attrs["histograms"]: the last COUNTERS (or END) chunk's stage histograms,
    a list of series (record/hist.py), or None; df.attrs["hist_drops"] the
    drops counted beside them by last stage and reason.
    df.attrs["sampling"]: --sample's setting and counts (record/sampling.py),
    or None for a file without it.
    """
    rf = RecordFile(path, verify=verify, strict=strict)
    df = to_dataframe(rf)
    if less_probe:
        for col, f in (df.attrs["probe_floor"] or {}).items():
            df[f"{col}_less_probe"] = df[col] - f["mean_ns"]
    for note in rf.notes:
        warnings.warn(f"{rf.path}: {note}", RecordFileWarning, stacklevel=2)
    if rf.problems:
        if strict:
            raise RecordFileError(rf.message())
        warnings.warn(rf.message(), RecordFileWarning, stacklevel=2)
    return df


def add_verify_options(p, unchecked):
    """--verify (the default) and --no-verify for a command that loads a file;
    unchecked: what becomes of damaged bytes without the check."""
    p.add_argument("--verify", action="store_true", default=True,
                   help="(the default: the header's and every chunk's CRC32 are checked)")
    p.add_argument("--no-verify", dest="verify", action="store_false", default=True,
                   help=f"do not check CRC32s: damaged bytes are {unchecked}")


def time_columns(header):
    """Stage columns present: the core four always, optional ones when enabled."""
    enabled = set(header.get("stages") or ()) | set(fmt.CORE_STAGES)
    return [s for s in fmt.STAGE_NAMES if s in enabled]


def to_dataframe(rf):
    """The DataFrame of a parsed RecordFile; problems found in the records are
    added to rf.problems."""
    cols = _Columns(rf)
    starts = np.cumsum([0] + [len(arr) for arr in rf.records[:-1]])
    # numpy lets go of the GIL inside each step: chunks side by side
    with ThreadPoolExecutor(min(THREADS, len(os.sched_getaffinity(0)))) as pool:
        filled = list(pool.map(cols.fill, rf.records, starts))
    bad_stage = sum(n for n, _ in filled)

    problems = []
    if not np.array_equal(rf.flows["id"], np.arange(len(rf.flows))):
        problems.append("the FLOWS table's ids are not its row numbers 0, 1, ...")
    _count(problems, _unknown(cols.codes["status"], len(fmt.STATUS_NAMES)),
           "records have a status value this reader does not know")
    _count(problems, bad_stage,
           "dropped records have a drop stage this reader does not know")
    _count(problems, _unknown(cols.codes["path"], len(fmt.PATH_NAMES)),
           "records have a path value this reader does not know")
    missing, flow_none = cols.addresses_from_records()
    if missing:
        problems.append(f"{missing} records name a flow that is not in the FLOWS table "
                        "(their src and dst come from the records themselves)")
    if rf.verify:
        problems += invariants.problems(rf, [t for _, t in filled], flow_none)

    out = {t: cols.copied[t] for t in cols.times}
    out.update(cols.delays)
    categories = {"status": fmt.STATUS_NAMES, "path": fmt.PATH_NAMES,
                  "drop_stage": fmt.STAGE_NAMES,
                  "src": cols.src_names, "dst": cols.dst_names,
                  "in_if": cols.if_names, "out_if": cols.if_names}
    for name in COLUMN_ORDER:
        if name in categories:
            out[name] = pd.Categorical.from_codes(cols.codes[name], categories[name],
                                                  validate=False)
        else:
            out[name] = cols.copied[name] if name in cols.copied else cols.derived[name]
    nat_facts = nat.summary(rf, cols.copied["flow"], cols.copied["t3"])
    out.update(nat.columns(nat_facts, cols.copied["flow"], cols.copied["t3"], len(rf.flows),
                           cols.src_names + cols.dst_names))
    if rf.verify:
        problems += nat.problems(nat_facts, rf.trailer, "flight_dump" in rf.header)
    df = pd.DataFrame(out, copy=False)
    cal = rf.header.get("calibration")
    why = None if cal is None else calibration.check(cal)
    if why:
        problems.append(f"the header's calibration is left out: {why}")
    clock = clock_facts(rf.header)
    costs = probe_cost(rf.counters)
    floors = delay_floors(rf.header, costs)
    problems += floor_problems(df, floors)
    rf.problems.extend(problems)
    attrs = dict(header=rf.header, router_id=router_id(rf.header),
                 trailer=rf.trailer, counters=rf.counters,
                 truncated=rf.truncated, path=rf.path, problems=rf.problems,
                 dropped_records=rf.dropped_records, notes=rf.notes,
                 clock=clock, clock_problems=clock_problems(clock, rf.header),
                 cross_cpu=int(np.count_nonzero(cols.derived["cross_cpu"])),
                 probe_cost=costs, probe_floor=floors,
                 histograms=hist.series(rf.counters),
                 hist_drops=hist.drops(rf.counters),
                 sampling=sampling.summary(rf.header, rf.counters),
                 nat=nat_facts,
                 calibration=None if why else cal)
    df.attrs.update({k: _shared(v) for k, v in attrs.items()})
    return df


class SharedDict(dict):
    """A dict of df.attrs that pandas does not copy. pandas deep-copies
    df.attrs into the result of every operation: with a header of megabytes
    that took longer than the operation itself. Every frame made from a
    loaded one shares these: change them on a copy of your own."""

    def __deepcopy__(self, memo):
        return self


class SharedList(list):
    """A list of df.attrs that pandas does not copy (SharedDict)."""

    def __deepcopy__(self, memo):
        return self


def _shared(v):
    """v as a value of df.attrs: a dict or a list shared, not copied."""
    if isinstance(v, dict):
        return SharedDict(v)
    return SharedList(v) if isinstance(v, list) else v


def probe_cost(counters):
    """Per stage, what its probe costs the delay after its stamp (probecost.py);
    None when the file has no probe cost, or one not of the documented shape."""
    pc = (counters or {}).get("probe_cost")
    return stage_costs(pc) if pc is not None and not check(pc) else None


def clock_facts(header):
    """The header's clock facts, each its value or "unknown" (not recorded:
    a file written before them, a fact the recorder could not read, or a
    value of the wrong type). Such older files still name the clocksource."""
    got = header.get("clock")
    got = got if isinstance(got, dict) else {"clocksource": header.get("clocksource")}
    facts = {}
    for key, kind in CLOCK_FACTS.items():
        v = got.get(key)
        ok = _is(v, kind)
        if kind is list:
            ok = ok and all(isinstance(x, str) for x in v)
        if kind is dict:  # realtime_sync, whole or unknown
            ok = ok and all(_is(v.get(k), t) for k, t in REALTIME_SYNC.items())
        facts[key] = v if ok else UNKNOWN
    return facts


def _is(v, kind):
    # bool is an int in Python: an integer fact must not be a boolean
    return isinstance(v, kind) and not (kind is int and isinstance(v, bool))


def router_id(header):
    """The router a file recorded, as the header names it: its router_id, or
    for a file written before it, what the recorder's default would have been
    (the hostname, HOST/NETNS when it recorded a named namespace)."""
    if header.get("router_id") is not None:
        return header["router_id"]
    host = header.get("hostname") or "?"
    netns = (header.get("netns") or {}).get("name")
    return f"{host}/{netns}" if netns else host


def clock_problems(facts, header):
    """Sentences for the clock facts that make the instants less accurate:
    a clocksource other than tsc on x86, a TSC that is not constant or not
    non-stop (the recorder warned of the same when it ran)."""
    out = []
    machine = (header.get("kernel") or {}).get("machine")
    if machine in _X86 and facts["clocksource"] not in ("tsc", UNKNOWN):
        out.append(f"clocksource {facts['clocksource']}, not tsc: every instant was read "
                   "from it, coarser and costlier than the TSC (docs/clock.md)")
    if facts["constant_tsc"] is False:
        out.append("the TSC is not constant (no constant_tsc): its rate followed the "
                   "CPU's frequency (docs/clock.md)")
    if facts["nonstop_tsc"] is False:
        out.append("the TSC is not non-stop (no nonstop_tsc): it may have stopped in "
                   "deep idle states (docs/clock.md)")
    return out


class _Columns:
    """The DataFrame's arrays for every record of a file, filled chunk by chunk.

    Within a chunk, BLOCK records at a time: each field is copied out of the
    block while it is in cache, and every derived column is computed from those
    copies before moving on, so the records cross the memory bus once.
    """

    def __init__(self, rf):
        n = rf.n_records
        self.times = time_columns(rf.header)
        self.delay_defs = [d for d in DELAYS if d[1] in self.times and d[2] in self.times]
        self.copied = {f: np.empty(n, dtype=fmt.RECORD_DTYPE[f])
                       for f in self.times + list(PLAIN)}
        self.delays = {d[0]: np.empty(n, dtype=np.float64) for d in self.delay_defs}
        self.derived = {"dscp": np.empty(n, np.uint8), "family": np.empty(n, np.uint8),
                        "cross_cpu": np.empty(n, bool)}

        # categorical codes from lookup tables; the last entry (-1) catches
        # every value past the known ones (np.take mode="clip")
        self.src_names, self.src_lut = _address_lut(rf.flows, "saddr")
        self.dst_names, self.dst_lut = _address_lut(rf.flows, "daddr")
        self.if_names, self.if_lut = _interface_lut(rf.header, rf.counters)
        luts = {"src": self.src_lut, "dst": self.dst_lut,
                "in_if": self.if_lut, "out_if": self.if_lut}
        self.codes = {name: np.empty(n, dtype=lut.dtype) for name, lut in luts.items()}
        self.codes.update(status=np.empty(n, np.int8), path=np.empty(n, np.int8),
                          drop_stage=np.empty(n, np.int8))
        self.unflowed = []  # (rows, records) whose flow id is not in the flow table
        # verify=False opts out of every check of what the file says
        self.rules = Rules(rf, self.times, self.delay_defs, self.if_lut) if rf.verify else None

    def fill(self, arr, pos):
        """Fill rows pos.. with the records of one chunk; returns how many of
        its dropped records have a drop stage past the known ones, and what the
        file's invariants found in it (a Tally). Chunks may be filled at once,
        in threads: each writes its own rows only."""
        bad_stage = 0
        tally = Tally()
        if isinstance(arr, Columns):
            # the columns are the fields already: straight into their rows
            fields = None
            for f, c in self.copied.items():
                arr.into(f, c[pos:pos + len(arr)])
        else:
            # a file of an older layout lacks the newer fields: 0, as not seen
            fields = {f: arr[f] if f in arr.dtype.names else np.zeros(len(arr), c.dtype)
                      for f, c in self.copied.items()}
        status_f, stage_f, path_f = arr["status"], arr["drop_stage"], arr["path"]
        zero = {t: np.empty(min(BLOCK, len(arr)), bool) for t in self.times}
        either = np.empty(min(BLOCK, len(arr)), bool)
        scratch = np.empty(min(BLOCK, len(arr)), np.uint64)
        for lo in range(0, len(arr), BLOCK):
            hi = min(lo + BLOCK, len(arr))
            k, sl = hi - lo, slice(pos + lo, pos + hi)
            col = {f: c[sl] for f, c in self.copied.items()}
            if fields is not None:
                for f, c in col.items():
                    c[...] = fields[f][lo:hi]
            for t in self.times:
                np.equal(col[t], 0, out=zero[t][:k])
            for name, later, earlier in self.delay_defs:
                d = self.delays[name][sl]
                np.subtract(col[later], col[earlier], out=d)
                # 0 = stage not seen: no delay
                np.logical_or(zero[later][:k], zero[earlier][:k], out=either[:k])
                np.copyto(d, np.nan, where=either[:k])
            c = {name: codes[sl] for name, codes in self.codes.items()}
            # status and stage values are their codes (status counts from 1);
            # values out of range are set to -1 after the loop (_unknown)
            c["status"][...] = status_f[lo:hi]
            c["status"] -= 1
            c["path"][...] = path_f[lo:hi]  # from 0; past the known ones: _unknown
            c["drop_stage"][...] = stage_f[lo:hi]
            # a stage past the known ones (255 would be -1 as int8) is NaN, and counted
            unknown = stage_f[lo:hi] >= len(fmt.STAGE_NAMES)
            dropped = c["status"] == _DROPPED
            bad_stage += int(np.count_nonzero(unknown & dropped))
            np.logical_or(unknown, ~dropped, out=unknown)
            np.copyto(c["drop_stage"], -1, where=unknown)
            np.take(self.src_lut, col["flow"], out=c["src"], mode="clip")
            np.take(self.dst_lut, col["flow"], out=c["dst"], mode="clip")
            unknown = np.flatnonzero(c["src"] < 0)
            if len(unknown):  # rare: kept for addresses_from_records
                self.unflowed.append((pos + lo + unknown, arr[lo:hi].take(unknown)))
            np.take(self.if_lut, col["in_ifindex"], out=c["in_if"], mode="clip")
            np.take(self.if_lut, col["out_ifindex"], out=c["out_if"], mode="clip")
            np.right_shift(col["tos"], 2, out=self.derived["dscp"][sl])
            family = self.derived["family"][sl]
            np.bitwise_and(col["flags"], fmt.F_IPV6, out=family)
            family *= 2
            family += 4
            # t1 and t4 stamped on two CPUs: the transit holds their TSCs' offset
            cross = self.derived["cross_cpu"][sl]
            np.not_equal(col["cpu_in"], col["cpu_out"], out=cross)
            cross &= c["status"] == _COMPLETE
            if self.rules:
                self.rules.block(tally, pos + lo, col, {t: z[:k] for t, z in zero.items()},
                                 {name: self.delays[name][sl]
                                  for name, _, _ in self.delay_defs},
                                 c, arr[lo:hi], family, scratch[:k])
            # the wire packets a record stands for: 0 in the file is one
            np.maximum(col["segs"], 1, out=col["segs"])
            np.maximum(col["out_segs"], 1, out=col["out_segs"])
        return bad_stage, tally

    def addresses_from_records(self):
        """Give records without a known flow their src/dst from their own addresses.

        Returns how many of them had a flow id that should have been in the
        table, and how many FLOW_NONE (the recorder's table was full: expected,
        and counted in the trailer).
        """
        if not self.unflowed:
            return 0, 0
        rows = np.concatenate([r for r, _ in self.unflowed])
        recs = np.concatenate([a for _, a in self.unflowed])
        family = np.where(recs["flags"] & fmt.F_IPV6, 6, 4).astype(np.uint8)
        for col, side, names in (("src", "saddr", self.src_names),
                                 ("dst", "daddr", self.dst_names)):
            keys, inverse = np.unique(np.column_stack([family, recs[side]]), axis=0,
                                      return_inverse=True)
            index = {name: i for i, name in enumerate(names)}
            new = np.array([index.setdefault(_address(k[0], k[1:]), len(index)) for k in keys])
            names[len(names):] = list(index)[len(names):]
            codes = self.codes[col]
            if np.dtype(_code_type(len(names))).itemsize > codes.itemsize:
                codes = self.codes[col] = codes.astype(_code_type(len(names)))
            codes[rows] = new[inverse.ravel()]
        none = int(np.count_nonzero(recs["flow"] == fmt.FLOW_NONE))
        return len(recs) - none, none


def _code_type(ncategories):
    return np.int8 if ncategories < 127 else np.int16 if ncategories < 32767 else np.int32


def _unknown(codes, ncategories, lowest=0):
    """Set codes outside lowest..ncategories-1 to -1 (NaN); a mask of where they were."""
    bad = (codes < lowest) | (codes >= ncategories)
    codes[bad] = -1
    return bad


def _count(problems, mask, what):
    bad = mask if isinstance(mask, int) else int(np.count_nonzero(mask))
    if bad:
        problems.append(f"{bad} {what}")


def _interface_lut(header, counters=None):
    """(interface names, ifindex -> code table) from the header's interfaces
    and the ifindexes they had later in the run (an interface deleted and made
    again: the trailer's "ifaces")."""
    names, index = [], {}
    later = [{"name": name, "ifindex": i}
             for name, v in ((counters or {}).get("ifaces") or {}).items()
             for i in v["ifindexes"]]
    for iface in (header.get("interfaces") or []) + later:
        name, ifindex = iface.get("name"), iface.get("ifindex")
        if name is None or not isinstance(ifindex, int) or not 0 <= ifindex < 1 << 20 \
                or ifindex in index:
            continue
        if name not in names:
            names.append(name)
        index[ifindex] = names.index(name)
    lut = np.full(max(index, default=-1) + 2, -1, dtype=_code_type(len(names)))
    for ifindex, code in index.items():
        lut[ifindex] = code
    return names, lut


def _address(family, raw):
    if family == 6:
        return ipaddress.IPv6Address(bytes(raw)).compressed
    return str(ipaddress.IPv4Address(bytes(raw[:4])))


def _address_lut(flows, side):
    """(address strings, flow row -> code table) for saddr or daddr of the flow table."""
    names = {}
    codes = [names.setdefault(_address(fam, raw), len(names))
             for fam, raw in zip(flows["family"], flows[side])]
    return list(names), np.array(codes + [-1], dtype=_code_type(len(names)))
