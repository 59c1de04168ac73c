"""The machine result: summary, causes, findings, rejects (and the rest of the model)."""

from __future__ import annotations

import json
from typing import Any


def render(model: dict[str, Any]) -> str:
    return json.dumps(model, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
