"""Pin the rule pack to the five rules sample_logs/README.md documents findings for.

The CI-gate and SQL tests do arithmetic on finding counts (44 in output2.txt, 18 of them high);
disabling every other rule keeps that arithmetic about the gate, not about which rules the pack
happens to hold today.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from forensics.check import engine
from forensics.config import Settings

SAMPLE_RULES = (
    "max-tokens",
    "reasoning-leak",
    "stop-no-tool-calls",
    "think-loop",
    "unclosed-think",
)


def others(*also: str) -> list[str]:
    """Rule ids to disable: every pack rule outside SAMPLE_RULES, plus `also`."""
    return sorted({r.id for r in engine.load_rules()} - set(SAMPLE_RULES) | set(also))


def disable_line(*also: str) -> str:
    """A TOML `disable = [...]` line for a config file."""
    return f"disable = {json.dumps(others(*also))}\n"


def settings() -> Settings:
    return Settings(disable=tuple(others()))


def config_file(directory: Path) -> Path:
    path = directory / "pinned-rules.toml"
    path.write_text(disable_line())
    return path


# The pinned config the gate and SQL tests scan with, written once per test session.
PINNED = str(config_file(Path(tempfile.mkdtemp(prefix="forensics-pinned-"))))
