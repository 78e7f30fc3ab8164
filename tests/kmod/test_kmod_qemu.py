"""The kernel module backend in QEMU, one test per Debian kernel series.

testbed/qemu/run.sh builds kmod/ against the series' headers, boots the
matching Debian kernel under QEMU (TCG) and runs testbed/qemu/guest.sh inside:
records checked against known traffic (one complete record per forwarded
packet, delays >= 0), the probes' own cost sampled at every stage and stored
in the file, `hopscope record --floor` on the module (packets forwarded,
nothing recorded), drops, eviction, queue overflow, privileges, netns removal,
unload under traffic, dmesg clean, and on 6.12 the eBPF backend on the same
traffic. Every check guest.sh has must print its CHECK line once,
none FAIL. Skipped only when QEMU or the headers are not installed
(scripts/install-deps.sh installs both); build/hopscope must be built.
"""
import glob
import os
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
from guestchecks import check_lines
RUN = ROOT / "testbed" / "qemu" / "run.sh"
GUEST = ROOT / "testbed" / "qemu" / "guest.sh"
SKIP = 77  # run.sh: QEMU or headers missing
# 6.12 has the BPF netfilter link (Linux >= 6.4), 6.1 does not: guest.sh's
# test_cli takes its first `backends=` then, its second otherwise
HAS_NF_LINK = {"6.1": False, "6.12": True}
# checks that may say SKIP, and why: Debian's kernels have no kmemleak; where
# both backends run, auto is not asked to pick the module, and without the
# link there is no eBPF backend to agree with
MAY_SKIP = {"6.1": {"kmemleak", "backends_agree"}, "6.12": {"kmemleak", "auto_picks_kmod"}}


def _headers(series):
    found = glob.glob(f"/usr/src/linux-headers-{series}.*-amd64")
    return [d for d in found if not d.endswith(("-cloud-amd64", "-rt-amd64"))]


def expected_checks(series, script=None):
    """The CHECK names guest.sh prints on a kernel of that series, read from
    the script: every `expect NAME` and `skipped NAME`, a `NAME_$be` once per
    backend test_cli runs there. Not `cli`: it is the skip of them all when
    the guest has no build/hopscope, which this test does not allow."""
    text = script if script is not None else GUEST.read_text()
    calls = re.findall(r"^\s*(?:expect|skipped) (\S+)", text, re.M)
    first, second = re.findall(r"^\s*backends=\"?([\w ]+?)\"?$", text, re.M)
    backends = (first if HAS_NF_LINK[series] else second).split()
    names = []
    for name in calls:
        if name.endswith("_$be"):
            names += [name[:-len("$be")] + b for b in backends]
        elif name != "cli":
            names.append(name)
    assert not [n for n in names if "$" in n], names  # a name this parser cannot expand
    return sorted(set(names))


def check_result(series, out, script=None):
    """Every check guest.sh has ran once, none failed, only the known ones skipped."""
    got = check_lines(out)
    want = expected_checks(series, script)
    assert sorted(got) == want, (f"checks missing: {sorted(set(want) - set(got))}, "
                                 f"unknown: {sorted(set(got) - set(want))}")
    assert not [n for n, st in got.items() if st == "FAIL"], out
    skipped = {n for n, st in got.items() if st == "SKIP"}
    assert skipped <= MAY_SKIP[series], f"skipped: {sorted(skipped - MAY_SKIP[series])}"
    m = re.search(r"RESULT kernel=\S+ pass=(\d+) fail=(\d+) skip=(\d+)", out)
    assert m, out
    passed, failed, skips = map(int, m.groups())
    assert (passed, failed, skips) == (len(want) - len(skipped), 0, len(skipped)), m.group(0)


@pytest.mark.parametrize("series", ["6.1", "6.12"])
def test_kmod_in_qemu(series):
    if not shutil.which("qemu-system-x86_64"):
        pytest.skip("qemu-system-x86_64 is not installed (scripts/install-deps.sh)")
    if not _headers(series):
        pytest.skip(f"no /usr/src/linux-headers-{series}.*-amd64 (scripts/install-deps.sh)")
    assert os.access(ROOT / "build" / "hopscope", os.X_OK), "run make: the guest runs build/hopscope"
    p = subprocess.run([str(RUN), series], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    out = p.stdout + p.stderr
    if p.returncode == SKIP:
        pytest.skip(out.strip().splitlines()[-1])
    print(out)
    assert p.returncode == 0, out
    check_result(series, out)
