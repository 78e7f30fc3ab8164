"""The Python half's one list of subcommands: what --commands prints is what
exists, each answers --help, and an unknown one is a usage error."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "userspace", "python"))


def hopscope(*args):
    return subprocess.run([sys.executable, "-m", "hopscope", *args], capture_output=True,
                          text=True, env=ENV)


@pytest.mark.slow  # a Python started per subcommand
def test_every_listed_subcommand_exists_and_answers_help():
    r = hopscope("--commands")
    assert r.returncode == 0, r.stderr
    names = [line.split("\t")[0] for line in r.stdout.splitlines()]
    assert {"export", "verify", "describe", "report", "campaign", "throughput",
            "scenario", "top"} <= set(names)
    assert "nosuch" not in names
    for name in names:
        h = hopscope(name, "--help")
        assert h.returncode == 0 and f"hopscope {name}" in h.stdout, h.stderr


def test_unknown_subcommand_is_a_usage_error():
    r = hopscope("nosuch")
    assert r.returncode == 2
    assert "unknown subcommand 'nosuch'" in r.stderr and "Traceback" not in r.stderr
    assert "nosuch" not in hopscope("--help").stdout


def test_a_reader_that_goes_away_stops_the_command_quietly():
    """`hopscope scenario check FILE | head -1`: the pipe closes after one
    line; the command stops without a message (141, as SIGPIPE's)."""
    # the file 200 times: more lines than a pipe holds, so a write finds it closed
    table1 = os.path.join(ROOT, "traffic", "paper", "table1.toml")
    p = subprocess.Popen([sys.executable, "-m", "hopscope", "scenario", "check"] + [table1] * 200,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    assert p.stdout.readline().startswith(table1.encode())
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait() == 141 and err == "", err
