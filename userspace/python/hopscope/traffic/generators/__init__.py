"""Traffic generators: D-ITG (ditg) and iperf3 (iperf)."""

# a sender that offered less than this share of the rate asked did not reach
# it: the generator, not the router, set the limit (reported, and a throughput
# trial at that rate tests nothing)
REACHED = 0.95
