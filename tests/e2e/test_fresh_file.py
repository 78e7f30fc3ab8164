"""A recording written by today's recorder (not the checked-in tests/data
files): it passes `hopscope verify`, loads with every checksum checked, its
COUNTERS snapshots and END add up (livebed.checked); and the same checks see
one flipped byte and a lost END in that very file."""
import os
import shutil

import pytest

import hopscope
from hopscope import RecordFileError
from hopscope.record import format as fmt
from hopscope.record.reader import RecordFile

from testlib import HOPSCOPE, left_router, sh, wait_for
from livebed import links, recorder, send_udp, stopped, tb, wait_out  # noqa: F401

N = 3000


def test_fresh_recording_is_whole_and_its_damage_is_seen(tb, recorder, tmp_path):
    tb.up()
    rec = recorder("--stages", "all")
    empty = os.path.getsize(rec.out)  # the header alone
    before = links()
    send_udp(N, port=8001)
    wait_out(before, N)
    # a flush (every second) has written records and a COUNTERS snapshot
    assert wait_for(lambda: os.path.getsize(rec.out) > empty
                    and RecordFile(rec.out, verify=False).n_records >= N, timeout=20)
    send_udp(N, port=8001, sport=40001)
    wait_out(before, 2 * N)
    df, c = stopped(rec)
    d = df[df.dport == 8001]
    assert len(d) == 2 * N and left_router(d).all(), d.status.value_counts()

    rf = RecordFile(rec.out)
    kinds = [ch.name for ch in rf.chunks]
    # the records as columns; the header's CRC is checked too
    assert kinds.count("COLUMNS") >= 2 and "COUNTERS" in kinds and kinds[-1] == "END", kinds
    assert rf.version == fmt.FILE_VERSION == 3

    # one byte of a record flipped: verify fails naming the chunk, a checked
    # load refuses it strictly and leaves the chunk out otherwise
    chunk = next(ch for ch in rf.chunks if ch.name == "COLUMNS")
    bad = tmp_path / "flipped.hsr"
    shutil.copy(rec.out, bad)
    with open(bad, "r+b") as f:
        f.seek(chunk.payload + 10)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x10]))
    v = sh(HOPSCOPE, "verify", str(bad), check=False)
    assert v.returncode == 1 and f"at byte {chunk.offset}" in v.stderr, v.stderr
    with pytest.raises(RecordFileError):
        hopscope.load(str(bad), strict=True)
    with pytest.warns(hopscope.RecordFileWarning):
        part = hopscope.load(str(bad))
    assert part.attrs["dropped_records"] == chunk.count
    assert len(part) == len(df) - chunk.count

    # cut before its END: a recorder that did not close it
    cut = tmp_path / "cut.hsr"
    shutil.copy(rec.out, cut)
    os.truncate(cut, rf.chunks[-1].offset)
    v = sh(HOPSCOPE, "verify", str(cut), check=False)
    assert v.returncode == 1 and "no END" in v.stdout + v.stderr, v.stdout + v.stderr
