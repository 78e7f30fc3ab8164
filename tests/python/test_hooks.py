"""The header's hooks: the one documented list, and older files' dict read as it."""
import os
import subprocess
import sys

from hopscope.record.hooks import Hook, hooks
from hopscope.record.synth import write_synthetic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_documented_list():
    header = {"hooks": [
        {"stage": "t2", "hook": "netfilter/PRE_ROUTING", "priority": -2147483647,
         "backend": "ebpf"},
        {"stage": "t4", "hook": "tracepoint/net/net_dev_start_xmit", "priority": None,
         "backend": "kmod"}]}
    assert hooks(header) == [Hook("t2", "netfilter/PRE_ROUTING", -2147483647, "ebpf"),
                             Hook("t4", "tracepoint/net/net_dev_start_xmit", None, "kmod")]
    assert str(hooks(header)[0]) == "t2: netfilter/PRE_ROUTING (priority -2147483647)"


def test_an_older_files_dict_reads_as_the_list():
    header = {"backend": "ebpf", "hooks": {
        "t1": {"type": "xdp"}, "t3": {"type": "netfilter", "priority": 2147483646},
        "t4": {"type": "tp_btf/net_dev_start_xmit"}}}
    assert hooks(header) == [Hook("t1", "xdp", None, "ebpf"),
                             Hook("t3", "netfilter/POST_ROUTING", 2147483646, "ebpf"),
                             Hook("t4", "tp_btf/net_dev_start_xmit", None, "ebpf")]


def test_none_or_nonsense_is_no_hooks():
    assert hooks({}) == [] and hooks(None) == [] and hooks({"hooks": 3}) == []


def test_describe_shows_a_files_hooks(tmp_path):
    path = str(tmp_path / "s.hsr")
    write_synthetic(path, 100)
    r = subprocess.run([sys.executable, "-m", "hopscope", "describe", path], capture_output=True,
                       text=True, env=dict(os.environ,
                                           PYTHONPATH=os.path.join(ROOT, "userspace", "python")))
    assert r.returncode == 0, r.stderr
    assert "t2: netfilter/PRE_ROUTING (priority -2147483647)" in r.stdout
    assert "t4: tp_btf/net_dev_start_xmit" in r.stdout
