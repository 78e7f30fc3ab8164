"""throughput.json: the lossless rates `hopscope throughput` found, which
scenarios reuse as rate = "lossless*F" (format in docs/campaigns.md)."""
import json
import os

from ..files import write_json

FORMAT = "hopscope-throughput/1"
FILE = "throughput.json"


class ThroughputError(Exception):
    pass


# what reading a throughput.json may raise: unreadable, not JSON, not the format
READ_ERRORS = (OSError, ValueError, KeyError, TypeError, ThroughputError)


def write_results(path, scenario_path, method, results):
    doc = {"format": FORMAT, "scenario": os.path.abspath(scenario_path), "method": method,
           "conditions": results}
    write_json(path, doc)


def read_results(path):
    """A throughput.json as a dict: {condition name: lossless pps or None}."""
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ThroughputError(f"{path}: not a {FORMAT} file")
    return {name: c.get("lossless_pps") for name, c in doc["conditions"].items()}
