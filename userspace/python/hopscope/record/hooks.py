"""The header's `hooks`: where each stage was attached (docs/record-format.md).
Files from before that list had one shape (a dict by stage) read as the same
list, with what they say."""
from typing import NamedTuple

_NETFILTER = {"t2": "PRE_ROUTING", "t_fwd": "FORWARD", "t3": "POST_ROUTING",
              "local_in": "LOCAL_IN"}


class Hook(NamedTuple):
    stage: str          # a stage name, "local_in", "drop" or "pieces"
    hook: str           # "xdp", "netfilter/PRE_ROUTING", "tp_btf/net_dev_start_xmit", ...
    priority: int | None
    backend: str | None

    def __str__(self):
        prio = "" if self.priority is None else f" (priority {self.priority})"
        return f"{self.stage}: {self.hook}{prio}"


def hooks(header):
    """[Hook] of a record file's header, in the file's order; [] when it has none."""
    raw = (header or {}).get("hooks")
    if isinstance(raw, list):
        return [Hook(h.get("stage", "?"), h.get("hook", "?"), h.get("priority"),
                     h.get("backend")) for h in raw if isinstance(h, dict)]
    if isinstance(raw, dict):  # written before the one shape: {stage: {"type": ...}}
        out = []
        for stage, h in raw.items():
            h = h if isinstance(h, dict) else {}
            kind = str(h.get("type", "?"))
            if kind == "netfilter" and stage in _NETFILTER:
                kind = f"netfilter/{_NETFILTER[stage]}"
            out.append(Hook(stage, kind, h.get("priority"), header.get("backend")))
        return out
    return []
