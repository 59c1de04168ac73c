"""forensics: offline trajectory forensics for LLM-agent benchmark runs."""

from forensics.pipeline import ScanResult, scan

__all__ = ["ScanResult", "scan"]
__version__ = "0.1.0"
