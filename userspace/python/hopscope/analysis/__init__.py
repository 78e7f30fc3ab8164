"""Delays, queues, coffee breaks and losses of a run's records: one topic per
module (stats, hist, interarrival, queues, coffee, busy, loss), all of them at
once with analyse(). Reads DataFrames from hopscope.load; knows nothing of how
the traffic was made."""
from .run import Analysis, analyse

__all__ = ["Analysis", "analyse"]
