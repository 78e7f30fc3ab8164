"""hopscope: per-packet forwarding delays of a Linux software router.

    import hopscope
    df = hopscope.load("run.hsr")      # one row per packet; see docs/record-format.md
    p = hopscope.load_path(["r1.hsr", "r2.hsr"])   # routers along a path; docs/path.md
"""
from .record.load import load
from .analysis.path import load_path
from .record.reader import RecordFile, RecordFileError, RecordFileWarning

from .record.header import VERSION as __version__
__all__ = ["load", "load_path", "RecordFile", "RecordFileError", "RecordFileWarning", "__version__"]
