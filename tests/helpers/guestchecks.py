"""The CHECK lines of a QEMU guest (testbed/qemu/guest.sh, nics-guest.sh,
routers-guest.sh), as run.sh, nics.sh and routers.sh echo them: shared by
tests/kmod, tests/nics and tests/routers."""
import re


def check_lines(out):
    """{name: status} of the echoed CHECK lines; a name printed twice is an error."""
    found = re.findall(r"^  (\S+) (ok|FAIL|SKIP)\b", out, re.M)
    names = [n for n, _ in found]
    assert len(names) == len(set(names)), f"a check printed twice: {names}"
    return dict(found)


def assert_all_passed(out, want):
    """Every check in want printed once and ok, no other, and the guest's
    RESULT line says so."""
    got = check_lines(out)
    assert sorted(got) == sorted(want), (f"checks missing: {sorted(set(want) - set(got))}, "
                                         f"unknown: {sorted(set(got) - set(want))}")
    assert not [n for n, st in got.items() if st != "ok"], out
    m = re.search(r"RESULT kernel=\S+ pass=(\d+) fail=(\d+) skip=(\d+)", out)
    assert m, out
    assert tuple(map(int, m.groups())) == (len(want), 0, 0), m.group(0)
