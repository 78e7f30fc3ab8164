"""hopscope record on real drivers, in QEMU (testbed/qemu/nics.sh).

The Debian 6.12 kernel boots under QEMU (TCG) with four emulated NICs per
driver joined pairwise as wires, the drivers out of the linux-image package;
testbed/qemu/nics-guest.sh runs UDP through a router namespace in each XDP
mode, and one TCP connection per driver, and checks that every forwarded
packet has one complete record, that a driver refusing native XDP is an
error when native is asked and generic under auto, and that a driver that
runs native XDP without metadata room (vmxnet3) stops the run with an error
or is switched to generic, never a run that records nothing and exits 0. Every check below must print its CHECK
line once, none FAIL. Skipped only when QEMU or the 6.12 headers are missing.
"""
import glob
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
from guestchecks import assert_all_passed
RUN = ROOT / "testbed" / "qemu" / "nics.sh"
SKIP = 77  # nics.sh: QEMU, headers or build/hopscope missing
DRIVERS = ("virtio_net", "e1000e", "vmxnet3")
# the checks each series' guest prints: 6.12 the eBPF backend in every XDP
# mode, 6.1 the kernel module
CHECKS = {
    "6.12": sorted([f"{drv}_{mode}" for drv in DRIVERS for mode in ("native", "generic", "auto")]
                   + ["virtio_net_native_local_and_drops", "virtio_net_gro", "dmesg_clean"]
                   + [f"{drv}_tcp_{mode}" for drv, mode in (("virtio_net", "native"),
                      ("virtio_net", "generic"), ("e1000e", "auto"), ("vmxnet3", "generic"))]
                   + [f"{drv}_tap_{mode}" for drv, mode in (("virtio_net", "native"),
                      ("virtio_net", "generic"), ("e1000e", "generic"), ("vmxnet3", "generic"))]
                   + ["virtio_net_tcp_tap_native", "vmxnet3_tcp_tap_generic"]),
    "6.1": sorted([f"{drv}_{kind}kmod" for drv in DRIVERS
                   for kind in ("", "tap_", "tcp_", "tcp_tap_")]
                  + ["virtio_net_gro", "dmesg_clean"]),
}


@pytest.mark.parametrize("series", sorted(CHECKS))
def test_nics_in_qemu(series):
    if not shutil.which("qemu-system-x86_64"):
        pytest.skip("qemu-system-x86_64 is not installed (scripts/install-deps.sh)")
    if not glob.glob(f"/usr/src/linux-headers-{series}.*-amd64"):
        pytest.skip(f"no /usr/src/linux-headers-{series}.*-amd64 (scripts/install-deps.sh)")
    assert os.access(ROOT / "build" / "hopscope", os.X_OK), "run make: the guest runs build/hopscope"
    p = subprocess.run([str(RUN), series], cwd=ROOT, capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    if p.returncode == SKIP:
        pytest.skip(out.strip().splitlines()[-1])
    print(out)
    assert_all_passed(out, CHECKS[series])
    assert p.returncode == 0, out
