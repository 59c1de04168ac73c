"""forensics: offline trajectory forensics for LLM-agent benchmark runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forensics.diagnosis.result import ScanResult
    from forensics.pipeline import Scan, connect, scan

__all__ = ["Scan", "ScanResult", "connect", "scan"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """The API on first use: `forensics --help` then imports neither polars nor DuckDB."""
    if name in ("Scan", "connect", "scan"):
        from forensics import pipeline

        return getattr(pipeline, name)
    if name == "ScanResult":
        from forensics.diagnosis.result import ScanResult

        return ScanResult
    raise AttributeError(f"module 'forensics' has no attribute {name!r}")
