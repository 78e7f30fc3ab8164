"""Which records the paper's delays describe.

Every complete record left by a traced output with the stages of its path
(the `path` column, docs/recording.md "Forwarding paths"). The paper's
d_iq, d_p and d_oq, the queues and the coffee breaks are the IP stack's:
they are computed over the complete records of a path that passes
PRE_ROUTING and POST_ROUTING, never over a fast path's, whose packets have
neither t2 nor t3.
"""
from .format import STACK_PATHS


def stack_complete(df):
    """Mask of the complete records of a stack path (t1 .. t4 all stamped)."""
    complete = (df["status"] == "complete").to_numpy()
    if "path" not in df.columns:  # a frame made without it: every path is the stack
        return complete
    return complete & df["path"].isin(STACK_PATHS).to_numpy()


def path_counts(df):
    """{path: complete records}, the paths present only, in the header's order."""
    counts = df["path"][(df["status"] == "complete").to_numpy()].value_counts(sort=False)
    return {p: int(n) for p, n in counts.items() if n}
