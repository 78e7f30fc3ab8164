"""The recorder's writer judges a t4 it did not see (HS_F_T4_UNSEEN) and
stores the verdict in the file: records fed to userspace/writer.c by a small C
program, the file read back with the Python loader."""
import shutil
import subprocess
from pathlib import Path

import hopscope

ROOT = Path(__file__).resolve().parents[2]
F_T4_UNSEEN = 0x80

PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "writer.h"

static struct hs_writer w;

static void add(__u32 src, __u8 status, __u64 t1)
{
	struct hs_record r;

	memset(&r, 0, sizeof(r));
	r.saddr[0] = src;
	r.daddr[0] = 0x02031262;
	r.proto = 17;
	r.sport = 40000;
	r.dport = 5201;
	r.status = status;
	r.t[HS_T1] = t1;
	if (status == HS_ST_COMPLETE)
		r.t[HS_T2] = t1 + 1, r.t[HS_T3] = t1 + 2, r.t[HS_T4] = t1 + 3, r.out_ifindex = 3;
	r.seq = hs_seq(0, t1);
	if (hs_writer_add(&w, &r))
		_exit(1);
}

int main(int argc, char **argv)
{
	char end[256];

	if (hs_writer_open(&w, argv[1], "{\"format\":\"hopscope-record\",\"version\":3,"
			   "\"stages\":[\"t1\",\"t2\",\"t3\",\"t4\"]}", 1))
		return 1;
	/* the ring's records first, as every backend hands them over */
	add(0x01011262, HS_ST_COMPLETE, 1000);	/* flow A: left; arrived at 1000 */
	add(0x01011262, HS_ST_EVICTED, 700);	/* A, its slot taken a lap later: left */
	add(0x02011262, HS_ST_EVICTED, 5);	/* flow B: evicted, nothing of it left */
	/* then the packets in flight at the stop */
	add(0x01011262, HS_ST_INFLIGHT, 500);	/* A, before the one that left: t4 unseen */
	add(0x01011262, HS_ST_INFLIGHT, 2000);	/* A, after it: still inside */
	add(0x02011262, HS_ST_INFLIGHT, 10);	/* flow B, nothing of it left: still inside */
	if (hs_writer_sync(&w))	/* the counts final before END */
		return 1;
	snprintf(end, sizeof(end), "{\"userspace\":{\"t4_unseen\":%llu},\"stop_reason\":\"signal\"}",
		 (unsigned long long)w.lane[0].t.t4_unseen);
	if (hs_writer_close(&w, end))
		return 1;
	printf("%llu\n", (unsigned long long)w.lane[0].t.t4_unseen);
	hs_writer_free(&w);
	return 0;
}
"""


def test_inflight_or_evicted_overtaken_by_its_flow_is_flagged_t4_unseen(tmp_path):
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed (scripts/install-deps.sh installs it)"
    (tmp_path / "w.c").write_text(PROGRAM)
    exe = tmp_path / "w"
    subprocess.run([gcc, "-std=gnu11", "-Wall", "-Werror", "-I", str(ROOT / "include"),
                    "-I", str(ROOT / "userspace"), "-o", str(exe),
                    str(tmp_path / "w.c"), str(ROOT / "userspace" / "writer.c"),
                    str(ROOT / "userspace" / "columns.c"), str(ROOT / "userspace" / "flows.c"),
                    "-ldeflate", "-pthread"], check=True)
    path = tmp_path / "v.hsr"
    out = subprocess.run([str(exe), str(path)], check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["2"]

    df = hopscope.load(path)
    unseen = (df["flags"].to_numpy() & F_T4_UNSEEN) != 0  # df.flags is pandas'
    assert list(df.status.astype(str)) == ["complete", "evicted", "evicted", "inflight",
                                           "inflight", "inflight"]
    assert list(unseen) == [False, True, False, True, False, False]
    assert df.attrs["trailer"]["userspace"]["t4_unseen"] == 2
