"""NAT's translations in a record file: where NAT changed a packet's tuple,
the tuple t3 (POST_ROUTING) saw beside the one t1 read from the wire
(include/hopscope_file.h, HS_FLOW_NAT; docs/record-format.md).

A translation is filed by flow, and a record gets its flow's translation
when it reached t3. It gets none where it cannot be told which tuple it had:
the flow's translation changed during the run, or more of the flow's
records reached t3 than the kernel saw translated (some were not).
"""
import ipaddress

import numpy as np
import pandas as pd

from . import format as fmt
from .invariants import Problem

COLUMNS = ("nat_src", "nat_dst", "nat_sport", "nat_dport")
_PORTS = (6, 17)  # the kernel compares ports for TCP and UDP only


def _address(family, raw):
    if family == 6:
        return ipaddress.IPv6Address(bytes(raw)).compressed
    return str(ipaddress.IPv4Address(bytes(raw[:4])))


def _tuple(item):
    """(src, sport, dst, dport) of a flow or translation item; ports None
    where the kernel compares none"""
    fam = int(item["family"])
    ports = int(item["proto"]) in _PORTS and (item["sport"] or item["dport"])
    return (_address(fam, item["saddr"]), int(item["sport"]) if ports else None,
            _address(fam, item["daddr"]), int(item["dport"]) if ports else None)


def translations(rf):
    """{flow id: dict(to, packets, changed)} from the file's translation items,
    in file order: an id's last item counts; changed when any of its items
    says so or two of them differ."""
    out = {}
    for item in rf.nat:
        fid, to = int(item["id"]), _tuple(item)
        prev = out.get(fid)
        changed = (int(item["kind"]) == fmt.FLOW_NAT_CHANGED
                   or (prev is not None and (prev["changed"] or prev["to"] != to)))
        out[fid] = {"to": to, "packets": int(item["packets"]), "changed": changed}
    return out


def summary(rf, flow, t3):
    """The file's NAT facts (df.attrs["nat"]): whether its backend recorded
    translations, and each translated flow with its records at t3."""
    got = translations(rf)
    # a pass over every record, for files with translations only
    at_t3 = np.bincount(flow[(t3 != 0) & (flow < len(rf.flows))],
                        minlength=len(rf.flows)) if got else None
    # packets are final at the stop only: a file without END cannot tell
    final = rf.trailer is not None
    flows, unknown = [], 0
    for fid, t in sorted(got.items()):
        if fid >= len(rf.flows):
            unknown += 1
            continue
        records = int(at_t3[fid])
        flows.append({"flow": fid, "from": _tuple(rf.flows[fid]), **t, "records": records,
                      "mixed": final and records > t["packets"]})
    # None: a file from before translations were recorded
    return {"recorded": rf.header.get("nat_translations"), "flows": flows,
            "unknown_ids": unknown}


def columns(nat, flow, t3, nflows, known=()):
    """nat_src, nat_dst (categorical, their categories the addresses known,
    src's and dst's, and then the translated ones), nat_sport, nat_dport
    (UInt16): each record's translated tuple, NA where it has none to tell"""
    n = len(flow)
    if not any(not (f["changed"] or f["mixed"]) for f in nat["flows"]):
        # nothing to tell (most files): every value NA, without a pass over the records
        none = pd.Categorical.from_codes(np.full(n, -1, np.int8), list(dict.fromkeys(known)),
                                         validate=False)
        port = pd.arrays.IntegerArray(np.zeros(n, np.uint16), np.ones(n, bool))
        return {"nat_src": none, "nat_dst": none.copy(), "nat_sport": port,
                "nat_dport": port.copy()}
    src_code, dst_code = (np.full(nflows + 1, -1, np.int32) for _ in range(2))
    sport, dport = (np.zeros(nflows + 1, np.uint16) for _ in range(2))
    has_ports = np.zeros(nflows + 1, bool)
    index = {a: i for i, a in enumerate(dict.fromkeys(known))}
    for f in nat["flows"]:
        if f["changed"] or f["mixed"]:
            continue
        s, sp, d, dp = f["to"]
        fid = f["flow"]
        src_code[fid] = index.setdefault(s, len(index))
        dst_code[fid] = index.setdefault(d, len(index))
        if sp is not None:
            sport[fid], dport[fid], has_ports[fid] = sp, dp, True
    names = list(index)
    at = np.minimum(flow, nflows)  # FLOW_NONE and any id past the table: none
    on = (t3 != 0) & (src_code[at] >= 0)
    out = {}
    for col, code in (("nat_src", src_code), ("nat_dst", dst_code)):
        out[col] = pd.Categorical.from_codes(np.where(on, code[at], -1), names,
                                             validate=False)
    ports_on = on & has_ports[at]
    for col, v in (("nat_sport", sport), ("nat_dport", dport)):
        out[col] = pd.arrays.IntegerArray(v[at] if n else np.zeros(0, np.uint16), ~ports_on)
    return out


def problems(nat, trailer, dump=False):
    """What the translations and the END chunk's nat counters disagree on:
    invariants of class "nat" (docs/record-format.md, "The file's invariants").
    More records of a flow at t3 than its translated packets is no problem of
    the file: NAT left some alone (a rule added while the flow's conntrack
    entry lived), and summary() marks the flow mixed."""
    out = []
    if nat["unknown_ids"]:
        out.append(Problem(f"{nat['unknown_ids']} NAT translations name a flow that is not "
                           "in the FLOWS table", "nat", nat["unknown_ids"]))
    c = (trailer or {}).get("counters") or {}
    if "nat" not in c or not nat["recorded"]:
        return out
    filed = sum(f["packets"] for f in nat["flows"])
    changed = any(f["changed"] for f in nat["flows"])
    # every packet t3 found translated is in its flow's count, or found the
    # map full; a flight dump holds its own records' flows' alone
    if not dump and not changed and filed + c["nat_full"] != c["nat"]:
        out.append(Problem(f"the translations count {filed} packets and nat_full "
                           f"{c['nat_full']}, the kernel's nat counter {c['nat']}", "nat"))
    return out


def lines(nat, most=20):
    """(label, text) lines for `hopscope describe`: each translated flow (the
    first most), and what the records cannot tell"""
    if nat["recorded"] is False:
        return [("nat", "not recorded: this file's backend does not read NAT's "
                        "translations (columns nat_* are empty)")]
    out = []
    for f in nat["flows"][:most]:
        text = f"{_show(f['from'])} -> {_show(f['to'])}: {f['packets']} packets"
        if f["changed"]:
            text += ("; CHANGED during the run (the last one shown): its records carry "
                     "no translated tuple")
        elif f["mixed"]:
            text += (f"; {f['records']} records reached t3, more than NAT changed: some "
                     "were not translated, so none carries the tuple")
        out.append(("nat", text))
    rest = nat["flows"][most:]
    if rest:
        odd = sum(f["changed"] or f["mixed"] for f in rest)
        out.append(("nat", f"{len(rest)} more translated flows (df.attrs['nat'])"
                           + (f", {odd} of them changed or not translated throughout"
                              if odd else "")))
    return out


def _show(t):
    s, sp, d, dp = t
    side = lambda a, p: a if p is None else (f"[{a}]:{p}" if ":" in a else f"{a}:{p}")
    return f"{side(s, sp)} > {side(d, dp)}"
