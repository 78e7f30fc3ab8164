"""The CHECK lines of a QEMU guest (testbed/qemu/guest.sh, nics-guest.sh),
as run.sh and nics.sh echo them: shared by tests/kmod and tests/nics."""
import re


def check_lines(out):
    """{name: status} of the echoed CHECK lines; a name printed twice is an error."""
    found = re.findall(r"^  (\S+) (ok|FAIL|SKIP)\b", out, re.M)
    names = [n for n, _ in found]
    assert len(names) == len(set(names)), f"a check printed twice: {names}"
    return dict(found)
