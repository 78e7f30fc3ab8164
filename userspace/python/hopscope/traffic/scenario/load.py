"""Scenario files (TOML): what an experiment runs, validated before anything
starts. traffic/README.md documents every key.

    s = load_scenario("traffic/paper/table1.toml")   # ScenarioError names file:line
    for cond in s.conditions(): ...                  # cases x the [vary] product
"""
import itertools
import math
import os
import re
import tomllib
from dataclasses import asdict, dataclass, field, replace

from ..throughput_file import READ_ERRORS, read_results
from . import check
from .build import build
from .lines import key_lines, line_of


MAX_FRACTION = 10  # of the lossless rate: beyond, a typing error


class ScenarioError(Exception):
    """A scenario file that cannot be run; the message names file, line and problem."""


@dataclass(frozen=True)
class Sender:
    name: str
    namespace: str      # testbed role: sender1 | sender2
    generator: str      # ditg | iperf3
    protocol: str       # udp | tcp
    tos: int
    size: dict          # {"dist": "constant", "value": 550} | normal | pareto | uniform
    rate: float         # mean packets per second
    gaps: dict          # {"dist": "constant" | "exponential"} | {"dist": "pareto", "shape": a}
    count: int | None   # packets, or None: send for duration seconds
    duration: float | None
    start: float        # seconds after the first sender starts
    port: int           # destination port
    cpu: str | int      # testbed role (sender, router, receiver) or CPU number
    send_buffer: int | None
    seed: float | None

    def seconds(self):
        """How long it sends: its duration, or its count at its rate."""
        return self.count / self.rate if self.count else self.duration

    def packets(self):
        """Packets it is asked to send (for a duration: rate x duration)."""
        return self.count or round(self.rate * self.duration)

    def pareto_scale_ms(self):
        """D-ITG's -V scale for this rate: mean gap = shape * scale / (shape - 1)."""
        a = self.gaps["shape"]
        return 1000.0 * (a - 1) / (a * self.rate)

    def to_dict(self):
        d = asdict(self)
        if self.gaps["dist"] == "pareto":
            d["gaps"]["scale_ms"] = self.pareto_scale_ms()
        return d


@dataclass(frozen=True)
class Condition:
    name: str
    scenario: str
    repetitions: int
    description: str
    testbed: dict       # mode, routers, shape (a string or {rK: spec}), shape_in, sink, shield
    tracer: dict        # stages, backend, xdp_mode, ring_mib, slots, drops
    senders: tuple      # the active Senders
    source_text: str = field(default="", compare=False, repr=False)  # the scenario file

    @property
    def duration(self):
        """Seconds from the first sender's start to the last one's end."""
        return max(s.start + s.seconds() for s in self.senders)

    def to_dict(self):
        """What defines the condition (not how often it runs): JSON-able."""
        return {"name": self.name, "testbed": dict(self.testbed),
                "tracer": {**self.tracer, "stages": list(self.tracer["stages"])},
                "senders": {s.name: s.to_dict() for s in self.senders}}

    def with_rate(self, pps):
        """A copy offering pps in total, split among the senders as their rates are."""
        if not pps > 0:
            raise ValueError(f"rate must be above 0 pps, not {pps}")
        f = pps / sum(s.rate for s in self.senders)
        return replace(self, senders=tuple(replace(s, rate=s.rate * f) for s in self.senders))

    def with_duration(self, seconds):
        """A copy in which every sender sends for seconds (counts dropped)."""
        if not seconds > 0:
            raise ValueError(f"duration must be above 0 s, not {seconds}")
        return replace(self, senders=tuple(replace(s, count=None, duration=float(seconds))
                                           for s in self.senders))


@dataclass
class Scenario:
    path: str
    name: str
    description: str
    source_text: str
    _conditions: list

    def conditions(self):
        return list(self._conditions)

    def at_lossless(self, path, fraction=1.0):
        """A copy in which each condition offers fraction x the total rate
        `hopscope throughput` found lossless for it (the throughput.json at
        path), split among its senders as the file's rates are: the paper's
        "critical conditions" on this router. ScenarioError names what is
        missing."""
        if not 0 < fraction <= MAX_FRACTION:
            raise ScenarioError(f"--fraction {fraction:g}: give a number above 0, at most "
                                f"{MAX_FRACTION}")
        try:
            rates = read_results(path)
        except READ_ERRORS as e:
            raise ScenarioError(f"{path}: cannot read the lossless rates: {e} (make them with: "
                                f"hopscope throughput {self.path} -o DIR)")
        missing = [c.name for c in self._conditions if not rates.get(c.name)]
        if missing:
            raise ScenarioError(f"{path} has no lossless rate for {', '.join(missing)} (it has: "
                                f"{', '.join(n for n, r in rates.items() if r) or 'none'}); "
                                f"make it with: hopscope throughput {self.path} -o DIR")
        conds = [c.with_rate(rates[c.name] * fraction) for c in self._conditions]
        beyond = [f"{c.name}: {s.name}: {s.rate:.0f} pps is more than {check.PROGRAM[s.generator]}"
                  f" sends (about {check.MAX_PPS[s.generator]})"
                  for c in conds for s in c.senders if s.rate > check.MAX_PPS[s.generator]]
        if beyond:
            raise ScenarioError(f"{path} at {fraction:g} x: " + "; ".join(beyond))
        return replace(self, _conditions=conds)


def load_scenario(path):
    """Read and check a scenario file; ScenarioError lists every problem found."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}")
    return parse_scenario(text, path)


def parse_scenario(text, path="<scenario>"):
    try:
        doc = tomllib.loads(text)
    except RecursionError:
        raise ScenarioError(f"{path}: not a scenario: values nested too deeply")
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column \d+\)", str(e))
        where = f"{path}:{m.group(1)}" if m else path
        raise ScenarioError(f"{where}: not valid TOML: {re.sub(r' [(]at .*', '', str(e))}")
    problems = []
    conds = _conditions(doc, path, problems)
    if problems:
        lines = key_lines(text)
        out = []
        for origin, msg in problems:
            line = line_of(lines, origin)
            entry = f"{path}:{line}: {msg}" if line else f"{path}: {msg}"
            if entry not in out:
                out.append(entry)
        out.sort(key=_line_number)
        raise ScenarioError("\n".join(out))
    default_name = os.path.splitext(os.path.basename(path))[0]
    conds = [replace(c, source_text=text) for c in conds]
    return Scenario(path, doc.get("name", default_name), doc.get("description", ""), text, conds)


def _line_number(entry):
    m = re.match(r".*?:(\d+): ", entry)
    return int(m.group(1)) if m else 0


def _conditions(doc, path, problems):
    base, senders = {}, []
    check.flatten(doc, (), check.TOP, base, senders, problems)
    cases = doc.get("conditions", [{}])
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases) or not cases:
        problems.append((("conditions",), "conditions: must be [[conditions]] tables"))
        return []
    named = "conditions" in doc
    axes = check.vary_axes(doc.get("vary", {}), senders, problems)
    scenario = doc.get("name", os.path.splitext(os.path.basename(path))[0])
    if not isinstance(scenario, str):
        problems.append((("name",), "name: must be a string"))
        scenario = "scenario"
    lossless = check.Lossless(doc.get("throughput"), path, problems)
    n = len(cases) * math.prod(len(values) for _, values in axes)
    if n > check.MAX_CONDITIONS:  # refused before any is made: the product can be huge
        problems.append((("vary",), f"vary: {len(cases)} case(s) x the [vary] product make {n} "
                                    f"conditions, more than {check.MAX_CONDITIONS}"))
        return []
    out, names = [], {}
    for i, case in enumerate(cases):
        flat = dict(base)
        case_name = check.case_name(case, i, named, scenario, problems)
        check.flatten(case, ("conditions", i), check.CASE, flat, senders, problems)
        for combo in itertools.product(*[values for _, values in axes]):
            cflat = dict(flat)
            parts = [case_name] if case_name else []
            for (key, _), (value, origin, label) in zip(axes, combo):
                cflat[key] = (value, origin)
                parts.append(label)
            name = "_".join(parts) or check.safe_name(scenario).lstrip(".-") or "scenario"
            if name in names:
                problems.append((("conditions", i, "name") if named else ("vary",),
                                 f"two conditions are named {name!r}: give them different names"))
                continue
            names[name] = True
            cond = build(cflat, name, scenario, senders, lossless, problems)
            if cond:
                senders_of = tuple(Sender(**s) for s in cond.pop("senders"))
                out.append(Condition(**cond, senders=senders_of))
    return out
