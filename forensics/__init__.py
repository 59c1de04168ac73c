"""forensics: offline trajectory forensics for LLM-agent benchmark runs."""

from forensics.pipeline import Scan, connect, scan
from forensics.result import ScanResult

__all__ = ["Scan", "ScanResult", "connect", "scan"]
__version__ = "0.1.0"
