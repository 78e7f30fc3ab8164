"""hopscope record on router configurations, in QEMU (testbed/qemu/routers.sh).

The build machine's kernel has no modules: nftables, conntrack, the
flowtable, 8021q, bonding and the tunnels come out of Debian's 6.12
linux-image package (wg from the host),
and testbed/qemu/routers-guest.sh runs one paced UDP flow per
configuration through guest-router.sh's router namespace while hopscope
records it (eBPF backend), the receiver's count the truth:

- an nftables flowtable and a ruleset shaped like OpenWrt's fw4 (DNAT,
  masquerade, flow offloading), each loaded before hopscope starts and after:
  hopscope starts in both orders; every datagram has one complete record,
  the first ones by the stack with t2 and t3, the rest by the flowtable
  (path flowtable; no_netfilter when the table came after the start) with
  neither, counted as fast_path; none partial;
- the input a VLAN sub-interface, named itself or its parent: every packet
  complete by the stack; both named together: refused, exit 2;
- the output a bond of one slave, named as the bond or as the slave: every
  packet complete, out of the device named, the bond passed by (out_pass);
- GRE, IPIP, VXLAN, Geneve, WireGuard and SIT (IPv6 inside) tunnels
  (testbed/qemu/guest-tunnels.sh),
  out (named as the tunnel or its underlay: every packet complete, path
  tunnel, with tun_out, out of the device named) and in (named as the
  underlay: path tunnel with tun_in; as the tunnel: path stack); each
  run's complete records equal the receiver's count and the named
  output's own transmit counter. A tunnel named in --in whose outer
  packets look like another tunnel's is refused, exit 2. WireGuard whose
  listen port is unknown (no wg): its inner packets counted (in_nometa)
  and warned about.

Every check below must print its CHECK line once, none FAIL. Skipped only
when QEMU, nft, wg or the 6.12 headers are missing.
"""
import glob
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
from guestchecks import assert_all_passed
RUN = ROOT / "testbed" / "qemu" / "routers.sh"
SKIP = 77  # routers.sh: QEMU, headers, nft or build/hopscope missing
CHECKS = sorted([f"{ruleset}_{order}_{what}" for ruleset in ("flowtable", "fw4")
                 for order in ("before", "after") for what in ("starts", "paths")]
                + ["vlan_sub", "vlan_parent", "vlan_both_refused", "bond_master", "bond_slave",
                   "dmesg_clean"]
                + [f"{kind}_{way}" for kind in ("gre", "ipip", "vxlan", "geneve", "wireguard", "sit")
                   for way in ("out_tunnel", "out_underlay", "in_underlay", "in_tunnel")]
                + [f"{kind}_in_alone_refused" for kind in ("gre", "ipip", "vxlan", "geneve")]
                + ["wireguard_unfollowed"])


def test_routers_in_qemu():
    for tool in ("qemu-system-x86_64", "nft", "wg"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (scripts/install-deps.sh)")
    if not glob.glob("/usr/src/linux-headers-6.12.*-amd64"):
        pytest.skip("no /usr/src/linux-headers-6.12.*-amd64 (scripts/install-deps.sh)")
    assert os.access(ROOT / "build" / "hopscope", os.X_OK), "run make: the guest runs build/hopscope"
    p = subprocess.run([str(RUN)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    out = p.stdout + p.stderr
    if p.returncode == SKIP:
        pytest.skip(out.strip().splitlines()[-1])
    print(out)
    assert_all_passed(out, CHECKS)
    assert p.returncode == 0, out
