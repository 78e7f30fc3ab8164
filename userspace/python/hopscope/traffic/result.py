"""What run_condition gives back, and the error it raises."""
from dataclasses import dataclass, field


class RunError(Exception):
    """The run could not be done; the testbed is down again when this is raised."""


@dataclass
class RunResult:
    sent: dict                  # sender -> packets its generator sent
    received: dict              # sender -> packets its receiver got
    forwarded: int              # router output tx_packets delta (control packets included)
    complete: int | None        # complete records; None without a recording
    paths: dict = field(default_factory=dict)
    seconds: float = 0.0
    truth: dict | None = None   # truth.truth_counts per sender (with a recording)
    records: object = None      # the records of the run's (first) router (hopscope.load)
    hops: list | None = None    # [(router role, its records)] in path order, with a recording
    path: object = None         # a chain's analysis.path.Path (load_path), else None
    counters: dict | None = None  # counters.Counters.deltas(): what the kernel counted
    cpus: dict | None = None    # role -> CPU, as the testbed placed them
    send_seconds: dict = field(default_factory=dict)  # sender -> s its generator took (iperf3)
