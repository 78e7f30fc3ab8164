"""The path join as one SQL query, for path sets too large for one
process's memory: DuckDB on one machine, Spark SQL on many.

    sql = path_sql.query(p)            # from a Path (its clocks and interfaces)
    sql = path_sql.from_json(j)        # or from path.json's (hopscope path)

The query reads relations hop1 .. hopN, one per router in path order, with
the columns of `hopscope export` (or of a campaign's packets dataset), and
returns the packets table of hopscope.load_path: first_hop, last_hop,
h{k}_seq, h{k}_d_iq .. h{k}_transit, link{k}, transit, fate, fate_hop. It
pairs records exactly as analysis/path_join.py does (same group, the window,
each the other's only candidate) with the clock offsets and joining
interfaces given; finding those is load_path's work (on a slice of the
files, or on all of them where they fit).
"""
from .path import T4_UNSEEN, WINDOW_NS

_DELAYS = ("d_iq", "d_p", "d_oq", "transit")


def query(p, window_ns=WINDOW_NS):
    """The query for the path p (from load_path) and its files' exports."""
    offsets = [dict(o) for _, o in p.offsets.iloc[1:].iterrows()]
    stages = [[s for s in ("t0", "t1", "t2", "t3", "t4") if s in h.df.columns] for h in p.hops]
    return query_for(len(p.hops), [(r.up_if, r.down_if) for r in p.links.itertuples()],
                     sorted(p.hops[-1].lead), offsets, stages, [h.window for h in p.hops],
                     window_ns)


def from_json(j, window_ns=WINDOW_NS):
    """The query from a path.json (`hopscope path`): for files too large to
    join in memory, load_path's facts found on a slice of them."""
    return query_for(len(j["hops"]), [(x["up_if"], x["down_if"]) for x in j["links"]],
                     j["exits"], j["offsets"][1:], [h["stages"] for h in j["hops"]],
                     [h["window"] for h in j["hops"]], window_ns)


def _lit(v):
    """A float literal read as DOUBLE by DuckDB and Spark alike (a bare 1.5
    is a DECIMAL in both)."""
    return f"CAST('{float(v)!r}' AS DOUBLE)"


def _str(v):
    return "'" + str(v).replace("'", "''") + "'"


def _at(off, t):
    """path_clock.Offset.at on SQL: offset + drift * 1e-6 * (t - t_ref)."""
    return (f"({_lit(off['offset_ns'])} + {_lit(off['drift_ppm'])} * {_lit(1e-6)}"
            f" * (({t}) - {_lit(off['t_ref_ns'])}))")


def _shift(offsets, t):
    """path.shift_ns on SQL."""
    theta, at = _lit(0), t
    for off in reversed(offsets):
        step = _at(off, f"({at}) - {_at(off, at)}")
        theta, at = f"({theta} + {step})", f"(({at}) - {step})"
    return theta


def query_for(nhops, faces, exits, offsets, stages, windows, window_ns=WINDOW_NS):
    """faces: per link (upstream interface, downstream interface); exits: the
    last hop's interfaces out of the path; offsets: per hop after the
    first, a dict of offset_ns, drift_ppm, t_ref_ns, uncertainty_ns;
    stages: per hop the instants its relation has (t0 .. t4); windows: per
    hop its recording's (start, stop) on hop 1's clock (path.json's)."""
    w = int(window_ns)
    ctes = []
    for k in range(1, nhops + 1):
        have = stages[k - 1]
        first = ("CASE WHEN t1 > 0 THEN t1 ELSE greatest(" + ", ".join(have) + ") END"
                 if len(have) > 1 else "t1")
        shift = (f"CAST(floor({_shift(offsets[:k - 1], f'CAST({first} AS DOUBLE)')} + 0.5)"
                 " AS BIGINT)")
        inst = ", ".join(f"CASE WHEN {s} > 0 THEN {s} - shift ELSE 0 END AS s_{s}"
                         for s in have)
        ctes.append(
            f"r{k} AS (SELECT *, CAST(key AS BIGINT) * 16777216 + CAST(ip_len AS BIGINT) * 256"
            f" + CAST(proto AS BIGINT) AS g, {shift} AS shift FROM hop{k})")
        ctes.append(f"h{k} AS (SELECT *, {inst} FROM r{k})")
    for k in range(1, nhops):
        up_if, down_if = faces[k - 1]
        ctes.append(
            f"c{k} AS (SELECT u.seq AS up, d.seq AS down FROM (SELECT seq, g,"
            f" {_handover(up_if)} AS s_out FROM h{k}) u JOIN h{k + 1} d"
            f" ON u.g = d.g WHERE u.s_out > 0 AND d.in_if = {_str(down_if)} AND d.s_t1 > 0"
            f" AND u.s_out BETWEEN d.s_t1 - {w} AND d.s_t1 + {w})")
        ctes.append(f"n{k} AS (SELECT up, down, count(*) OVER (PARTITION BY up) AS nu,"
                    f" count(*) OVER (PARTITION BY down) AS nd FROM c{k})")
        ctes.append(f"p{k} AS (SELECT up, down FROM n{k} WHERE nu = 1 AND nd = 1)")
        ctes.append(f"a{k} AS (SELECT DISTINCT up FROM n{k} WHERE nu > 1 OR nd > 1)")
    leads = [[faces[k][0]] for k in range(nhops - 1)] + [list(exits)]
    starts = []
    for s in range(1, nhops + 1):
        lead = ", ".join(_str(x) for x in leads[s - 1]) or "NULL"
        came = f" AND seq NOT IN (SELECT down FROM p{s - 1})" if s > 1 else ""
        joins, cols = "", []
        for k in range(1, nhops + 1):
            if k < s:
                cols.append(f"CAST(NULL AS BIGINT) AS q{k}")
            elif k == s:
                cols.append(f"seq AS q{k}")
        body = f"SELECT {', '.join(cols)} FROM h{s} WHERE NOT (coalesce(in_if, '') IN ({lead})){came}"
        sel = [f"x.q{k}" for k in range(1, s + 1)]
        for k in range(s, nhops):
            joins += f" LEFT JOIN p{k} ON x.q{k} = p{k}.up" if k == s else \
                f" LEFT JOIN p{k} ON p{k - 1}.down = p{k}.up"
            sel.append(f"p{k}.down AS q{k + 1}")
        starts.append(f"SELECT {', '.join(sel)} FROM ({body}) x{joins}")
    ctes.append("chain AS (" + " UNION ALL ".join(starts) + ")")
    joined = " ".join(f"LEFT JOIN h{k} ON chain.q{k} = h{k}.seq" for k in range(1, nhops + 1))
    first = "CASE " + " ".join(f"WHEN chain.q{k} IS NOT NULL THEN {k}"
                               for k in range(1, nhops + 1)) + " END"
    last = "CASE " + " ".join(f"WHEN chain.q{k} IS NOT NULL THEN {k}"
                              for k in range(nhops, 0, -1)) + " END"
    fate = "CASE " + " ".join(f"WHEN chain.q{k} IS NOT NULL THEN "
                              f"{_fate(k, nhops, leads[k - 1], windows[k] if k < nhops else None)}"
                              for k in range(nhops, 0, -1)) + " END"
    t_in = "CASE " + " ".join(f"WHEN chain.q{k} IS NOT NULL THEN h{k}.s_t1"
                              for k in range(1, nhops + 1)) + " END"
    t_out = "CASE " + " ".join(f"WHEN chain.q{k} IS NOT NULL THEN h{k}.s_t4"
                               for k in range(nhops, 0, -1)) + " END"
    cols = [f"{first} AS first_hop", f"{last} AS last_hop"]
    for k in range(1, nhops + 1):
        cols.append(f"h{k}.seq AS h{k}_seq")
        cols += [f"h{k}.{d} AS h{k}_{d}" for d in _DELAYS]
    for k in range(1, nhops):
        cols.append(f"CASE WHEN h{k}.s_t4 > 0 AND h{k + 1}.s_t1 > 0"
                    f" THEN h{k + 1}.s_t1 - h{k}.s_t4 END AS link{k}")
        if "t0" in stages[k]:
            cols.append(f"CASE WHEN h{k}.s_t4 > 0 AND h{k + 1}.s_t1 > 0 AND h{k + 1}.s_t0 > 0"
                        f" THEN h{k + 1}.s_t0 - h{k}.s_t4 END AS link{k}_t0")
    cols += [f"{fate} AS fate", f"{last} AS fate_hop"]
    names = [c.rsplit(" AS ", 1)[1] for c in cols]
    ctes.append(f"packets AS (SELECT {', '.join(cols)}, {t_in} AS t_in, {t_out} AS t_out"
                f" FROM chain {joined})")
    return ("WITH " + ",\n".join(ctes) + f"\nSELECT {', '.join(names)},"
            " CASE WHEN fate = 'delivered' AND t_in > 0 AND t_out > 0 THEN t_out - t_in END"
            " AS transit FROM packets")


def _handover(face):
    """path.handover on SQL."""
    return (f"CASE WHEN out_if = {_str(face)} AND t4 > 0 THEN s_t4 WHEN (((flags & {T4_UNSEEN}) <> 0"
            f" AND t4 = 0) OR status = 'dropped') AND coalesce(in_if, '') <> {_str(face)}"
            " THEN s_t3 ELSE 0 END")


def _fate(k, nhops, lead, next_window):
    """path._fates for a packet last seen at hop k; next_window: the next
    hop's recording (start, stop)."""
    x = f"h{k}"
    lead = ", ".join(_str(v) for v in lead) or "NULL"
    if k == nhops:
        on = "'delivered'"
    else:
        on = (f"CASE WHEN {x}.seq IN (SELECT up FROM a{k}) THEN 'collision at the next hop'"
              f" WHEN {x}.nat_src IS NOT NULL OR {x}.nat_dst IS NOT NULL"
              " THEN 'NAT changed its key'"
              f" WHEN {x}.s_t4 > {int(next_window[1])} OR {x}.s_t4 < {int(next_window[0])}"
              " THEN 'next hop not recording' ELSE 'not seen at the next hop' END")
    return (f"(CASE WHEN {x}.t4 > 0 AND {x}.out_if IN ({lead}) THEN {on}"
            f" WHEN {x}.t4 > 0 THEN 'left the path'"
            f" WHEN ({x}.flags & {T4_UNSEEN}) <> 0 THEN 'not followed by the tracer'"
            f" WHEN {x}.status = 'dropped' THEN 'dropped'"
            f" WHEN {x}.status = 'inflight' THEN 'in flight at the stop'"
            f" WHEN {x}.status = 'other_out' THEN 'left the path'"
            " ELSE 'not followed by the tracer' END)")
