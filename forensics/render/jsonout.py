"""The machine result: summary, causes, findings, rejects (and the rest of the model)."""

from __future__ import annotations

import json
from typing import Any


def render(model: dict[str, Any]) -> str:
    # "page" is what only the HTML page shows (every turn's text): not part of the result.
    result = {k: v for k, v in model.items() if k != "page"}
    return json.dumps(result, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
