"""evaluation/overhead.md's figures for the kernel module are what
evaluation/bench/kmod_overhead.py makes of the committed
evaluation/results/kmod_overhead.json: none typed by hand or left stale
when the bench is run again."""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "evaluation", "bench"))
import kmod_overhead as b  # noqa: E402

JSON = os.path.join(ROOT, "evaluation", "results", "kmod_overhead.json")
PAGE = os.path.join(ROOT, "evaluation", "overhead.md")


def pct(s):
    return f"{s['median'] * 100:.1f} % ({s['min'] * 100:.1f}–{s['max'] * 100:.1f})"


def test_module_figures_are_the_committed_json():
    s = b.summarise(json.load(open(JSON))["runs"])
    text = " ".join(open(PAGE).read().split())
    rate = [b.fmt(s["rate"][k]) for k in ("floor/untraced", "traced/untraced", "traced/floor")]
    cpu = [b.fmt(s["cpu0_cost"][k]) for k in ("floor/untraced", "traced/untraced", "traced/floor")]
    assert f"| forwarded packets/s | {rate[0]} | **{rate[1]}** | {rate[2]} |" in text
    assert f"| CPU0's time per forwarded packet | {' | '.join(cpu)} |" in text
    for st in b.STAGES:
        assert f"{st} {pct(s['probe_share'][st])}" in text
    assert f"together {pct(s['probe_share']['sum'])}" in text
