"""userspace/routerlock.c, one recorder per router, driven by a small C
program in a scratch folder (no namespace, no root): the holder's line, the
second recorder's message naming it, a file left by a recorder that is gone
(taken over), and a folder that cannot be made."""
import re
import subprocess

import pytest

import charness

# argv: dir inode netns|- in out; takes the lock, says "locked", then holds
# it until its stdin closes
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "routerlock.h"

int main(int argc, char **argv)
{
	char buf[16];
	int fd = hs_router_lock(argv[1], strtoull(argv[2], NULL, 10),
				strcmp(argv[3], "-") ? argv[3] : NULL, argv[4], argv[5]);

	if (fd < 0)
		return 1;
	printf("locked\n");
	fflush(stdout);
	while (fgets(buf, sizeof(buf), stdin))
		;
	return 0;
}
"""
MESSAGE = (r"hopscope: another hopscope \((?P<line>.*)\) is recording this router: its probes "
           r"hold the router's hooks; stop it first \(one recorder per router records any "
           r"number of inputs: name them all in --in\)\n")


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    return str(charness.build(tmp_path_factory, "routerlock", PROGRAM, ["routerlock.c"]))


def holder(exe, d, *args):
    """a process that holds the lock (args: inode netns in out), once it says so"""
    p = subprocess.Popen([exe, str(d), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "locked\n", p.communicate()
    return p


def release(p):
    p.stdin.close()
    assert p.wait(timeout=10) == 0


def attempt(exe, d, *args):
    p = subprocess.run([exe, str(d), *args], input="", capture_output=True, text=True,
                       timeout=10)
    return p.returncode, p.stderr


def test_second_is_refused_with_the_holders_line(exe, tmp_path):
    d = tmp_path / "run"  # made by the first recorder
    first = holder(exe, d, "4026532315", "router", "r-s1,r-s2", "r-rx")
    try:
        line = (d / "recorder-4026532315.lock").read_text()
        assert re.fullmatch(rf"pid {first.pid}, router ns 'router', --in r-s1,r-s2 --out r-rx, "
                            r"since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n", line), line
        code, err = attempt(exe, d, "4026532315", "router", "r-s3", "r-rx")
        m = re.fullmatch(MESSAGE, err)
        assert code == 1 and m and m["line"] + "\n" == line, err
        # another router's lock is another file
        assert attempt(exe, d, "4026532316", "other", "a", "b") == (0, "")
    finally:
        release(first)
    # its end frees the router
    assert attempt(exe, d, "4026532315", "router", "r-s3", "r-rx") == (0, "")


def test_a_file_without_holder_is_taken_over(exe, tmp_path):
    (tmp_path / "recorder-7.lock").write_text("pid 1, router ns 'gone', --in x --out y, "
                                              "since 2000-01-01 00:00:00, and more text\n")
    p = holder(exe, tmp_path, "7", "-", "eth0", "eth1")
    try:
        line = (tmp_path / "recorder-7.lock").read_text()
        # replaced whole; no name: the namespace by its inode
        assert line.startswith(f"pid {p.pid}, router ns inode 7, --in eth0 --out eth1, since ")
        assert line.count("\n") == 1 and "more text" not in line
    finally:
        release(p)


def test_a_folder_that_cannot_be_made_is_an_error(exe, tmp_path):
    (tmp_path / "file").write_text("")
    code, err = attempt(exe, tmp_path / "file" / "run", "7", "-", "a", "b")
    assert code == 1
    assert err == (f"hopscope: cannot take the router lock {tmp_path}/file/run/recorder-7.lock: "
                   "Not a directory (it keeps to one recorder per router)\n"), err
