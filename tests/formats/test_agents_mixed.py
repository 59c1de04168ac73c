"""Every agent-log format of issue 12 in one directory: each file read or accounted for."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import forensics

AGENTS = Path(__file__).parent.parent / "data" / "agents"


def test_a_directory_mixing_every_agent_format_scans_without_rejects():
    result = forensics.scan([str(AGENTS)])
    assert result.rejects.is_empty()
    formats = Counter(f.format for f in result.files)
    assert formats == {
        "inspect_eval": 3,
        "inspect_json": 3,
        "swe_agent_traj": 2,
        # the test-repo run and the four format_errors/ trajectories
        "mini_swe_agent": 5,
        "harbor_atif": 4,
        "harbor_trial_result": 4,
        "openhands_events": 11,
        "openhands_state": 1,
        "openhands_legacy": 2,
        # Who&When and AgentRx histories (AG2, Magentic-One), and the excerpt of a Magentic-One
        # scenario that crashed
        "multi_agent_history": 4,
    }
    # a file without rows says why (a continuation, a trial result, a later event)
    assert all(f.note for f in result.files if f.records == 0)
    assert result.trajectories.height == 28
    assert Counter(result.findings["rule"]) == {
        "max-tokens": 3,
        "context-overflow": 2,
        "content-filtered": 1,
        "episode-crashed": 1,
        "no-action-failure": 1,
        "repeated-tool-call": 1,
        # the episodes ended by a limit or a harness exception: Harbor's AgentTimeoutError,
        # Inspect's token_limit, OpenHands' LLMContextWindowExceedError, the Magentic-One
        # scenario's ChunkedEncodingError (Who&When Hand-Crafted/23)
        "run-exit-infra": 4,
        # inspect_ai's own deduplication test log calls the same tool with the same result
        # five times in a row
        "action-loop": 1,
        # mini_swe_agent/format_errors/: the two-block replies its harness rejected (v1, v2 and
        # v2's mid-run copy), the empty one-token replies (v2 and its copy), the parser that does
        # not read the taught format and the exit it caused, the copy saved mid-run
        "format-error-reply": 3,
        "empty-protocol-reply": 2,
        "action-format-mismatch": 3,
        "run-exit-model": 1,
        # mini-swe-agent's copy saved mid-run, and AgentRx's Magentic-One run that stops on a
        # reply the orchestrator never answered (its labelled System Failure)
        "run-cut-off": 2,
        # Inspect's synthetic sandbox timeout (task toolfail), never got past
        "env-timeout": 1,
    }
