"""Regenerate the tau2 fixtures from the whole tau2-bench files (stdlib only, deterministic).

Run from the repository root: `python tests/data/tau2/make_fixtures.py` (it reads
tests/data/realdata_full/tau2/, or the folder FORENSICS_REALDATA names). Subsets are written the
way tau2 writes checkpoints (`json.dump(obj, f, indent=2)`, ASCII-escaped); see README.md.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The whole files (README.md gives their upstream repository, commit and path) are not kept in
# tests/data/realdata_full/tau2/ (or the folder FORENSICS_REALDATA names).
TAU2 = Path(os.environ.get("FORENSICS_REALDATA") or HERE.parent / "realdata_full") / "tau2"

# output name -> (source file, indices of the simulations kept)
SUBSETS = {
    "qwen2.5-7b_airline_llm_agent_gpt-4.1-user.subset6.json": (
        "qwen2.5-7b_airline_llm_agent_gpt-4.1-user.subset.json",
        [0, 1, 3, 13, 20, 21],
    ),
    "telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.subset2.json": (
        "2025-08-10T02:44:06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json",
        [8, 12],
    ),
    "gpt-4.1_airline_default_gpt-4.1_1trials.subset2.json": (
        "gpt-4.1_airline_default_gpt-4.1_1trials.json",
        [0, 18],
    ),
    "gpt-4.1_telecom_no-user_solo.subset2.json": (
        "gpt-4.1-2025-04-14_telecom_no-user_gpt-4.1-2025-04-14_4trials_5tasks.json",
        [0, 1],
    ),
    "leaderboard-trimmed_toolorchestra_airline.subset2.json": (
        "leaderboard-trimmed_toolorchestra_airline.first20.json",
        [13, 15],
    ),
}
# The truncated checkpoint is the qwen subset cut inside its third simulation, as a kill during
# v0.x's in-place rewrite leaves it.
TRUNCATED_IN_SIM = 2
CUT_INTO_MESSAGES = 2000


def dump(obj: object, path: Path) -> None:
    path.write_text(json.dumps(obj, indent=2), encoding="utf-8")


def subset(source: str, keep: list[int]) -> dict:
    data = json.loads((TAU2 / source).read_text(encoding="utf-8"))
    sims = [data["simulations"][i] for i in keep]
    ids = {s["task_id"] for s in sims}
    data["tasks"] = [t for t in data["tasks"] if t["id"] in ids]
    data["simulations"] = sims
    return data


def modern_run(gym: dict) -> None:
    """A tau2 >=1.0 text run in the dir layout, built from a real gym-branch simulation:
    raw_data becomes the whole ModelResponse (finish reason under choices[0]), the last agent
    turn is re-labelled as cut by the length limit, an infrastructure_error placeholder is
    added, and simulation_index lists a third simulation whose file is missing."""
    run = HERE / "dir_text_run"
    shutil.rmtree(run, ignore_errors=True)
    (run / "simulations").mkdir(parents=True)
    sim = copy.deepcopy(gym["simulations"][1])
    sim["id"] = "0f6c1e55-0000-4000-8000-000000000001"
    agent_turns = [m for m in sim["messages"] if m["role"] == "assistant" and m["raw_data"]]
    for msg in sim["messages"]:
        raw = msg.get("raw_data")
        if not raw:
            continue
        usage = dict(msg["usage"] or {})
        usage["total_tokens"] = usage.get("completion_tokens", 0) + usage.get("prompt_tokens", 0)
        usage["completion_tokens_details"] = {"reasoning_tokens": 0}
        msg["raw_data"] = {
            "id": "chatcmpl-synthetic",
            "created": 1767225600,
            "model": "gpt-4.1-2025-04-14",
            "object": "chat.completion",
            "choices": [raw],
            "usage": usage,
        }
    last = agent_turns[-1]
    last["raw_data"]["choices"][0]["finish_reason"] = "length"
    last["raw_data"]["usage"]["completion_tokens_details"] = {"reasoning_tokens": 250}
    last["usage"]["completion_tokens"] = 1024
    sim["termination_reason"] = "TerminationReason.MAX_STEPS"
    placeholder = {
        "id": "0f6c1e55-0000-4000-8000-000000000002",
        "task_id": "6",
        "timestamp": "2026-03-20T10:00:00.000000",
        "start_time": "2026-03-20T10:00:00.000000",
        "end_time": "2026-03-20T10:00:05.000000",
        "duration": 5.0,
        "termination_reason": "infrastructure_error",
        "agent_cost": None,
        "user_cost": None,
        "reward_info": None,
        "messages": [],
        "trial": 0,
        "seed": 300,
        "mode": "half_duplex",
        "info": {
            "error": "AssistantMessage must have either content or tool_calls.",
            "error_type": "ValueError",
            "failed_after_attempts": 4,
        },
    }
    info = copy.deepcopy(gym["info"])
    info["agent_info"]["llm_args"]["max_tokens"] = 1024
    index = [
        {"id": s["id"], "task_id": s["task_id"], "trial": 0, "reward": None}
        for s in (sim, placeholder)
    ]
    index.append({"id": "0f6c1e55-0000-4000-8000-000000000003", "task_id": "16", "trial": 0})
    dump(
        {"timestamp": gym["timestamp"], "info": info, "tasks": [], "simulation_index": index},
        run / "results.json",
    )
    for s in (sim, placeholder):
        dump(s, run / "simulations" / f"{s['id']}.json")


def voice_run() -> None:
    src = TAU2 / "dir_format_voice_testfixture"
    run = HERE / "dir_voice_run"
    shutil.rmtree(run, ignore_errors=True)
    (run / "simulations").mkdir(parents=True)
    shutil.copyfile(src / "results.json", run / "results.json")
    for path in sorted((src / "simulations").glob("*.json")):
        sim = json.loads(path.read_text(encoding="utf-8"))
        sim["ticks"] = sim["ticks"][:20]
        dump(sim, run / "simulations" / path.name)


def main() -> None:
    written = {}
    for name, (source, keep) in SUBSETS.items():
        written[name] = subset(source, keep)
        dump(written[name], HERE / name)
    qwen = json.dumps(written["qwen2.5-7b_airline_llm_agent_gpt-4.1-user.subset6.json"], indent=2)
    third = written["qwen2.5-7b_airline_llm_agent_gpt-4.1-user.subset6.json"]["simulations"][
        TRUNCATED_IN_SIM
    ]
    start = qwen.index(f'"id": "{third["id"]}"')
    cut = qwen.index('"messages": [', start) + CUT_INTO_MESSAGES
    (HERE / "qwen_truncated_checkpoint.json").write_text(qwen[:cut], encoding="utf-8")
    shutil.copyfile(
        TAU2 / "qwen2.5-7b_telecom_no-user_gpt-4.1-2025-04-14_4trials_5tasks.EMPTY-CHECKPOINT.json",
        HERE / "qwen2.5-7b_telecom_solo.EMPTY-CHECKPOINT.json",
    )
    modern_run(written["gpt-4.1_airline_default_gpt-4.1_1trials.subset2.json"])
    voice_run()


if __name__ == "__main__":
    main()
