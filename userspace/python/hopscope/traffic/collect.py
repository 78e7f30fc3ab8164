"""After a run: the generators' logs decoded, what each sender sent and its
receiver got, the truth join with the records, on a chain the routers'
files joined per packet (path/), metadata.json."""
import os

import pandas as pd

from .generators import REACHED, ditg, iperf, kernel_counted
from ..analysis.path import PathError, load_path
from ..record.load import load
from ..report.path import stage_table, write as write_path
from ..files import read_text, write_json
from .result import RunError, RunResult
from .truth import join_truth, truth_counts


def collect(run, counters, finish=None):
    """RunResult of a finished run (run._Run); writes the tables and metadata
    (after finish(result, meta), when given)."""
    cond, meta = run.cond, run.meta
    sent, received, send_seconds = {}, {}, {}
    for s in cond.senders:
        m = meta["senders"][s.name]
        out = read_text(run.path(f"{s.name}.stdout")) if s.generator == "ditg" else ""
        if "error" in out.lower():
            raise RunError(f"ITGSend of {s.name}: {out.strip()[-500:]}")
        try:
            if s.generator == "ditg":
                n_sent, n_recv, sport = _ditg_tables(run, s, m)
                if kernel_counted(s, cond):
                    m["receiver_logged"], n_recv = n_recv, meta["rxcount"][s.name]
                    if n_recv != m["receiver_logged"]:
                        meta["warnings"].append(
                            f"{s.name}: ITGRecv logged {m['receiver_logged']} of the {n_recv} "
                            "packets that reached the receiver (the rest have no rx_ns)")
            else:
                client = iperf.read_json(run.path(m["files"]["client"]))
                n_sent, sport = iperf.client_counts(client, s)
                m["send_seconds"] = send_seconds[s.name] = iperf.client_seconds(client, s)
                m["server_received"] = iperf.server_received(
                    iperf.read_json(run.path(m["files"]["server"])), s)
                n_recv = m["server_received"]
                if cond.testbed["sink"]:
                    n_recv = counters.deltas()["sink"]["packets"]
                elif kernel_counted(s, cond):
                    n_recv = meta["rxcount"][s.name]  # what reached the receiver
        except (RuntimeError, OSError, KeyError, ValueError) as e:
            raise RunError(f"{s.name}: its generator's results: {e}")
        m.update(sent=n_sent, received=n_recv, sport=sport, asked=s.packets())
        sent[s.name], received[s.name] = n_sent, n_recv
        if n_sent < REACHED * s.packets():
            meta["warnings"].append(f"{s.name} sent {n_sent} of the {s.packets()} packets asked "
                                    f"({s.rate:g} pps for {s.seconds():g} s): "
                                    f"{s.generator} did not reach the rate")
        elif send_seconds.get(s.name, 0) * REACHED > s.seconds():
            meta["warnings"].append(f"{s.name} took {send_seconds[s.name]:.3g} s to send the "
                                    f"{s.packets()} packets asked for {s.seconds():g} s: held "
                                    f"back (by its link's shaper or its CPU), it did not reach "
                                    f"the rate")
    errors = counters.deltas()["receiver_udp"]
    if errors.get("RcvbufErrors") or errors.get("InErrors"):
        meta["warnings"].append(
            f"the receiver's sockets dropped {errors.get('RcvbufErrors')} datagrams (UDP "
            f"RcvbufErrors; InErrors {errors.get('InErrors')}): D-ITG's logs lack them, iperf3's "
            "received counts them (they reached the receiver)")
    forwarded = counters.forwarded()
    meta["counts"] = {"sent": sent, "received": received, "forwarded": forwarded,
                      "routers": counters.per_router()}
    paths = {"metadata": run.path("metadata.json"), "scenario": run.path("scenario.toml")}
    result = RunResult(sent, received, forwarded, None, paths, counters=meta["interfaces"],
                       cpus=meta["cpus"], send_seconds=send_seconds)
    if run.record:
        files = run.record_files()
        paths["records"] = files[0][1]
        result.hops = [(role, _load(f)) for role, f in files]
        # the generators' truth is about the first router, where every packet enters
        df = result.records = result.hops[0][1]
        result.complete = meta["counts"]["complete"] = int((df["status"] == "complete").sum())
        meta["record_problems"] = list(df.attrs.get("problems") or ()) if not run.chain else \
            [f"{role}: {p}" for role, d in result.hops for p in d.attrs.get("problems") or ()]
        if run.chain:
            try:
                result.path = load_path([d for _, d in result.hops])
                paths["path"] = run.path("path")
                write_path(result.path, paths["path"], pdf=run.path_pdf)
            except (PathError, OSError) as e:
                raise RunError(f"joining the routers' files into path/: {e}")
            meta["path"] = path_summary(result.path)
        truth = join_truth(df, run.out, meta)
        if len(truth):
            paths["truth"] = run.path("truth.parquet")
            truth.to_parquet(paths["truth"], index=False)
        result.truth = meta["truth"] = truth_counts(truth)
        _check_truth(meta, result)
    if finish:
        finish(result, meta)
    write_json(paths["metadata"], meta)
    return result


def _load(f):
    """A record file, named in the path's results by its name in the run's folder."""
    df = load(f)
    df.attrs["path"] = os.path.basename(f)
    return df


def path_summary(p):
    """metadata.json's "path": the clocks' offsets, the packets that entered
    the path by fate (and the drops by hop), the end-to-end transit; the
    rest is in path/ (report/path.py)."""
    loss = p.loss
    dropped = loss[loss["fate"] == "dropped"].groupby("hop")["packets"].sum()
    transit = stage_table(p).iloc[-1]  # the path's transit, over delivered packets
    return {
        "folder": "path",
        "routers": [h.router for h in p.hops],
        "offsets": [{"hop": int(o.hop), "router": o.router, "method": o.method,
                     "offset_ns": float(o.offset_ns),
                     "uncertainty_ns": None if pd.isna(o.uncertainty_ns)
                     else float(o.uncertainty_ns)} for o in p.offsets.itertuples()],
        "entered": int(loss["packets"].sum()),
        "fates": {f: int(n) for f, n in loss.groupby("fate")["packets"].sum().items() if n},
        "dropped_by_hop": {p.hops[h - 1].router: int(n) for h, n in dropped.items()},
        "transit_p50_ns": None if not transit["packets"] else float(transit["p50_ns"]),
        "transit_p99_ns": None if not transit["packets"] else float(transit["p99_ns"]),
        "transit_packets": int(transit["packets"]),
        "problems": list(p.problems),
    }


def _ditg_tables(run, s, m):
    f = m["files"]
    table = ditg.packet_table(run.path(f["send_log"]), run.path(f["recv_log"]),
                              run.meta["senders_start_realtime_ns"])
    if not len(table):
        raise RuntimeError("ITGSend logged no packet sent")
    table.to_parquet(run.path(f["packets"]), index=False)
    ports = table["sport"].unique()
    if len(ports) != 1:
        raise RuntimeError(f"ITGSend used {len(ports)} source ports, expected one flow")
    return len(table), int(table["rx_ns"].notna().sum()), int(ports[0])


def _check_truth(meta, result):
    """The join must account for every packet the generators counted."""
    for name, c in result.truth.items():
        if "sent" not in c:
            continue
        if c["sent"] != result.sent[name]:
            meta["warnings"].append(f"truth: {name}: {c['sent']} packets joined, "
                                    f"{result.sent[name]} sent")
        if c.get("records_unmatched"):
            meta["warnings"].append(f"truth: {name}: {c['records_unmatched']} of its records "
                                    "could not be tied to a packet sent")
