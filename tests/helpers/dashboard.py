"""contrib/grafana/hopscope.json for the tests: its PromQL, with Grafana's
variables given values Prometheus takes, and the metric names a PromQL
expression reads."""
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = os.path.join(ROOT, "contrib", "grafana", "hopscope.json")
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan"}


def load():
    with open(DASHBOARD) as f:
        return json.load(f)


def queries(dash=None, window="5m"):
    """every expression of the panels and the query variables, as Prometheus
    runs them: $__rate_interval a fixed window, every other variable `.*`;
    label_values(SELECTOR, LABEL) as its selector"""
    dash = dash or load()
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            m = re.fullmatch(r"label_values\((.*), *[a-zA-Z_]+\)", v["query"]["query"])
            assert m, v["query"]
            exprs.append(m.group(1))
    return [re.sub(r"\$[a-z_]+", ".*", e.replace("$__rate_interval", window)) for e in exprs]


def metric_names(expr):
    """the metric names expr reads: what is left of it without strings, label
    matchers, ranges, grouping labels, functions, keywords and numbers"""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    e = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = re.findall(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()", e)
    return {n for n in names if n.lower() not in KEYWORDS}
