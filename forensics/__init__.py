"""forensics: offline trajectory forensics for LLM-agent benchmark runs."""

from forensics.pipeline import ScanResult, connect, scan

__all__ = ["ScanResult", "connect", "scan"]
__version__ = "0.1.0"
