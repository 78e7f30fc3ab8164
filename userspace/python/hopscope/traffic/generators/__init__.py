"""Traffic generators: D-ITG (ditg) and iperf3 (iperf)."""

# a sender that offered less than this share of the rate asked did not reach
# it: the generator, not the router, set the limit (reported, and a throughput
# trial at that rate tests nothing)
REACHED = 0.95


def kernel_counted(s, cond):
    """Whether sender s's received packets are counted in the receiver's kernel
    (rxcount.py): its UDP flows, unless a sink drops them before."""
    return s.protocol == "udp" and not cond.testbed["sink"]
