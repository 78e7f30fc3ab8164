"""A strict reader of the metrics text formats `hopscope serve` writes
(OpenMetrics 1.0 and Prometheus 0.0.4), for the tests: every rule either
format sets on what serve uses (metadata before its samples, families not
interleaved, names and labels of the right shape, sample names that belong
to their family's type, cumulative histogram buckets ending at +Inf equal
to _count, `# EOF` last in OpenMetrics) is checked, and a breach raises;
and get(), an HTTP GET as a scraper does it."""
import math
import re
import urllib.error
import urllib.request

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
SAMPLE = re.compile(rf"^({NAME})(\{{[^}}]*\}})? (\S+)$")
SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count", ""),
            "counter": ("_total",), "info": ("_info",), "gauge": ("",), "unknown": ("",)}


class FormatError(AssertionError):
    pass


def _labels(text, where):
    if not text:
        return {}
    inner, out, pos = text[1:-1], {}, 0
    while pos < len(inner):
        m = LABEL.match(inner, pos)
        if not m or m.group(1) in out:
            raise FormatError(f"{where}: bad or repeated label at {inner[pos:]!r}")
        out[m.group(1)] = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1),
                                 m.group(2))
        pos = m.end()
        if pos < len(inner):
            if inner[pos] != ",":
                raise FormatError(f"{where}: labels not separated by commas")
            pos += 1
    return out


def _value(text, where):
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    try:
        return float(text)
    except ValueError:
        raise FormatError(f"{where}: value {text!r} is not a number") from None


def parse(text, openmetrics):
    """{family: {"type", "help", "unit", "samples": [(name, labels, value)]}}"""
    lines = text.split("\n")
    if lines.pop() != "":
        raise FormatError("the text does not end with a newline")
    if openmetrics:
        if not lines or lines.pop() != "# EOF":
            raise FormatError("OpenMetrics text must end with # EOF")
    elif "# EOF" in lines:
        raise FormatError("# EOF in Prometheus 0.0.4 text")
    fams, current, done = {}, None, set()
    for n, line in enumerate(lines, 1):
        where = f"line {n}"
        if line.startswith("#"):
            m = re.match(rf"^# (TYPE|HELP|UNIT) ({NAME}) ?(.*)$", line)
            if not m:
                raise FormatError(f"{where}: not a TYPE, HELP or UNIT line: {line!r}")
            kind, name, rest = m.groups()
            if name != current:
                if name in fams:
                    raise FormatError(f"{where}: family {name} interleaved with another")
                if current:
                    done.add(current)
                current = name
                fams[name] = {"type": "unknown", "help": None, "unit": None, "samples": []}
            f = fams[name]
            if f["samples"] or f[kind.lower()] not in (None, "unknown"):
                raise FormatError(f"{where}: {kind} of {name} repeated or after its samples")
            if kind == "TYPE":
                if rest not in SUFFIXES:
                    raise FormatError(f"{where}: unknown type {rest!r}")
                if rest == "info" and not openmetrics:
                    raise FormatError(f"{where}: no info type in 0.0.4")
            if kind == "UNIT" and (not openmetrics or not name.endswith("_" + rest)):
                raise FormatError(f"{where}: UNIT {rest} on {name}")
            f[kind.lower()] = rest
            continue
        m = SAMPLE.match(line)
        if not m:
            raise FormatError(f"{where}: not a sample: {line!r}")
        name, labels, value = m.group(1), _labels(m.group(2), where), _value(m.group(3), where)
        if current is None or not any(name == current + s for s in SUFFIXES[fams[current]["type"]]) \
                and not (not openmetrics and fams[current]["type"] == "counter" and name == current):
            raise FormatError(f"{where}: sample {name} outside its family ({current})")
        if fams[current]["type"] == "counter" and (value < 0 or math.isnan(value)):
            raise FormatError(f"{where}: counter {name} is {value}")
        fams[current]["samples"].append((name, labels, value))
    for name, f in fams.items():
        if f["type"] == "histogram":
            _histogram(name, f["samples"])
    return fams


def _histogram(name, samples):
    series = {}
    for s, labels, v in samples:
        key = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
        series.setdefault(key, []).append((s[len(name):], labels.get("le"), v))
    for key, rows in series.items():
        les = [(float(le.replace("Inf", "inf")), v) for s, le, v in rows if s == "_bucket"]
        count = [v for s, _, v in rows if s == "_count"]
        if not les or les[-1][0] != math.inf or [le for le, _ in les] != sorted({le for le, _ in les}):
            raise FormatError(f"{name}{dict(key)}: le not ascending to +Inf")
        if any(b < a for (_, a), (_, b) in zip(les, les[1:])):
            raise FormatError(f"{name}{dict(key)}: buckets not cumulative")
        if count != [les[-1][1]]:
            raise FormatError(f"{name}{dict(key)}: _count {count} is not the +Inf bucket")


def get(url, accept=None):
    """(status, content type, body); status 0 when nothing answers"""
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()
    except OSError:
        return 0, None, ""
