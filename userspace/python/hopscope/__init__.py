"""hopscope: per-packet forwarding delays of a Linux software router.

    import hopscope
    df = hopscope.load("run.hsr")      # one row per packet; see docs/record-format.md
"""
from .record.load import load
from .record.reader import RecordFile, RecordFileError, RecordFileWarning

from .record.header import VERSION as __version__
__all__ = ["load", "RecordFile", "RecordFileError", "RecordFileWarning", "__version__"]
