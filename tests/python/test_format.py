"""hopscope.record.format must describe exactly the bytes include/hopscope*.h
define, and hopscope.record.header (generated from them) must hold exactly
their constants and lists.

A small C program compiled against the headers prints every size, offset and
constant; each is compared with the Python side.
"""
import shutil
import subprocess
from pathlib import Path

import pytest

from hopscope.record import format as fmt
from hopscope.record import header

ROOT = Path(__file__).resolve().parents[2]

FIELDS = {
    "hs_record": ["seq", "key", "drop_reason", "in_ifindex", "out_ifindex", "flow", "ip_len",
                  "sport", "dport", "cpu_in", "cpu_out", "tos", "proto", "status",
                  "drop_stage", "flags", "path", "saddr", "daddr", "segs", "tun_in_ns", "tun_out_ns",
                  "t4_span_ns", "out_segs", "reserved"],
    "hs_flow": ["id", "family", "proto", "kind", "sport", "dport", "saddr", "daddr", "packets"],
    "hs_file_header": ["magic", "version", "record_size", "header_bytes", "endian",
                       "header_crc32", "reserved"],
    "hs_chunk": ["magic", "type", "count", "bytes", "crc32", "index"],
}
# every integer the generated header module holds, by its C name
CONSTANTS = {
    **{f"HS_{k}": v for k, v in vars(header).items() if k.isupper() and type(v) is int},
    "HS_NSTAGES": len(fmt.STAGE_NAMES), "HS_C_NCOUNTERS": len(fmt.COUNTER_NAMES),
}
STRINGS = {f"HS_{k}": v for k, v in vars(header).items() if k.isupper() and type(v) is str}
LISTS = {k[:-len("_LIST")]: v for k, v in vars(header).items() if k.endswith("_LIST")}
DTYPES = {"hs_record": fmt.RECORD_DTYPE, "hs_flow": fmt.FLOW_DTYPE,
          "hs_file_header": fmt.FILE_HEADER_DTYPE, "hs_chunk": fmt.CHUNK_DTYPE}


def _program():
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "hopscope_file.h"',
             "int main(void) {",
             "  static const char *stages[] = HS_STAGE_NAMES, *counters[] = HS_COUNTER_NAMES;",
             "  struct hs_record r;",
             '  printf("magic %s\\n", HS_FILE_MAGIC);']
    for s, fields in FIELDS.items():
        lines.append(f'  printf("size {s} %zu\\n", sizeof(struct {s}));')
        for f in fields:
            lines.append(f'  printf("field {s} {f} %zu %zu\\n", offsetof(struct {s}, {f}), '
                         f'sizeof(((struct {s} *)0)->{f}));')
    lines += ['  for (int i = 0; i < HS_NSTAGES; i++)',
              '    printf("stage %d %s %zu %zu\\n", i, stages[i],',
              '           (size_t)((char *)&r.t[i] - (char *)&r), sizeof(r.t[i]));',
              '  printf("nstagenames %zu\\n", sizeof(stages) / sizeof(*stages));',
              '  for (size_t i = 0; i < sizeof(counters) / sizeof(*counters); i++)',
              '    printf("counter %zu %s\\n", i, counters[i]);']
    lines += [f'  printf("const {c} %llu\\n", (unsigned long long)({c}));' for c in CONSTANTS]
    lines += [f'  printf("string {c} %s\\n", {c});' for c in STRINGS]
    for lst, entries in LISTS.items():
        lines += [f'  printf("list {lst} HS_{i} %llu %s\\n", (unsigned long long)HS_{i}, "{n}");'
                  for i, _, n in entries]
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def c_layout(tmp_path_factory):
    """The C program's output, split into lists of words."""
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed to check the layout (scripts/install-deps.sh installs it)"
    d = tmp_path_factory.mktemp("layout")
    (d / "layout.c").write_text(_program())
    subprocess.run([gcc, "-std=gnu11", "-Wall", "-Werror", "-I", str(ROOT / "include"),
                    "-I", str(ROOT / "userspace"),
                    "-o", str(d / "layout"), str(d / "layout.c")], check=True)
    out = subprocess.run([str(d / "layout")], check=True, capture_output=True, text=True).stdout
    return [line.split() for line in out.splitlines()]


def _rows(c_layout, kind):
    return [row[1:] for row in c_layout if row[0] == kind]


def test_struct_sizes(c_layout):
    sizes = {name: int(size) for name, size in _rows(c_layout, "size")}
    assert sizes == {s: dt.itemsize for s, dt in DTYPES.items()}
    assert fmt.RECORD_SIZE == sizes["hs_record"]
    assert fmt.FLOW_SIZE == sizes["hs_flow"]
    assert fmt.FILE_HEADER_SIZE == sizes["hs_file_header"]
    assert fmt.CHUNK_HEADER_SIZE == sizes["hs_chunk"]


def test_every_field_offset_and_size(c_layout):
    c = {(s, f): (int(off), int(size)) for s, f, off, size in _rows(c_layout, "field")}
    # t[] is one Python field per stage
    c.update({("hs_record", name): (int(off), int(size))
              for _, name, off, size in _rows(c_layout, "stage")})
    py = {(s, f): (dt.fields[f][1], dt.fields[f][0].itemsize)
          for s, dt in DTYPES.items() for f in dt.names}
    assert py == c


def test_fields_leave_no_gaps(c_layout):
    """Every byte of each struct belongs to a field: a new C field cannot go unnoticed."""
    for s, dt in DTYPES.items():
        spans = sorted((dt.fields[f][1], dt.fields[f][0].itemsize) for f in dt.names)
        end = 0
        for off, size in spans:
            assert off == end, f"{s}: bytes {end}..{off} are in no field"
            end = off + size
        assert end == dt.itemsize


def test_stage_and_counter_names(c_layout):
    assert tuple(name for _, name, _, _ in _rows(c_layout, "stage")) == fmt.STAGE_NAMES
    assert int(_rows(c_layout, "nstagenames")[0][0]) == len(fmt.STAGE_NAMES)
    assert tuple(name for _, name in _rows(c_layout, "counter")) == fmt.COUNTER_NAMES


def test_constants(c_layout):
    assert {name: int(v) for name, v in _rows(c_layout, "const")} == CONSTANTS
    assert {name: v for name, v in _rows(c_layout, "string")} == STRINGS
    assert _rows(c_layout, "magic")[0][0].encode() == fmt.FILE_MAGIC


def test_lists_are_the_headers(c_layout):
    """Each X-macro list: the C enum values under the same ids, the same names."""
    c = {}
    for lst, ident, value, name in _rows(c_layout, "list"):
        c.setdefault(lst, []).append((ident[3:], int(value), name))
    assert c == {lst: list(entries) for lst, entries in LISTS.items()}
    assert set(LISTS) >= {"STAGE", "STATUS", "FLAG", "COUNTER"}


def test_generated_header_is_up_to_date():
    r = subprocess.run([str(ROOT / "scripts" / "gen-python-header"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_core_stages_are_named_stages():
    assert set(fmt.CORE_STAGES) <= set(fmt.STAGE_NAMES)
    assert fmt.padded(0) == 0 and fmt.padded(1) == 8 and fmt.padded(144) == 144
