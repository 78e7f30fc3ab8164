"""hopscope: per-packet forwarding delays of a Linux software router.

    import hopscope
    df = hopscope.load("run.hsr")      # one row per packet; see docs/record-format.md
"""
from .record.load import load
from .record.reader import RecordFile, RecordFileError, RecordFileWarning

__version__ = "0.1.0"
__all__ = ["load", "RecordFile", "RecordFileError", "RecordFileWarning", "__version__"]
