"""The kernel module backend in QEMU, one test per Debian kernel series.

testbed/qemu/run.sh builds kmod/ against the series' headers, boots the
matching Debian kernel under QEMU (TCG) and runs testbed/qemu/guest.sh inside:
records checked against known traffic (one complete record per forwarded
packet, delays >= 0), drops, eviction, queue overflow, privileges, netns
removal, unload under traffic, dmesg clean, and on 6.12 the eBPF backend on
the same traffic. Skipped only when QEMU or the headers are not installed
(scripts/install-deps.sh installs both).
"""
import glob
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUN = ROOT / "testbed" / "qemu" / "run.sh"
SKIP = 77  # run.sh: QEMU or headers missing


def _headers(series):
    found = glob.glob(f"/usr/src/linux-headers-{series}.*-amd64")
    return [d for d in found if not d.endswith(("-cloud-amd64", "-rt-amd64"))]


@pytest.mark.parametrize("series", ["6.1", "6.12"])
def test_kmod_in_qemu(series):
    if not shutil.which("qemu-system-x86_64"):
        pytest.skip("qemu-system-x86_64 is not installed (scripts/install-deps.sh)")
    if not _headers(series):
        pytest.skip(f"no /usr/src/linux-headers-{series}.*-amd64 (scripts/install-deps.sh)")
    p = subprocess.run([str(RUN), series], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    out = p.stdout + p.stderr
    if p.returncode == SKIP:
        pytest.skip(out.strip().splitlines()[-1])
    print(out)
    assert p.returncode == 0, out
    assert "fail=0" in out, out
