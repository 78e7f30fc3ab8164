"""README's example output is what `hopscope describe` prints for the
recording it names, line for line: a change to describe or to the file
shows here before a reader meets a stale example. (README's overhead line
is checked with the tables it sums up: test_overhead_table.py.)"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARK = "<!-- describe example:"


def example():
    """(the file README describes, the lines it shows)"""
    text = (ROOT / "README.md").read_text()
    block = re.search(re.escape(MARK) + r".*?-->\n```\n(.*?)```", text, re.S).group(1)
    lines = block.splitlines()
    return re.match(r"file\s+(\S+):", lines[0]).group(1), lines


def test_the_describe_example_is_the_files_own_output():
    path, lines = example()
    r = subprocess.run([sys.executable, "-m", "hopscope", "describe", path], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    printed = set(r.stdout.splitlines())
    assert [line for line in lines if line not in printed] == []
