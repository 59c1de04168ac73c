"""How an episode is named in every output: by its task (and trial) when the source has a
task, else by its trajectory id — never "task None", never a trial counter of a capture."""

from __future__ import annotations


def episode_label(task_id: object, trial: object, trajectory_id: str) -> str:
    """ "task 12 trial 0", or the trajectory id for a source without task ids.

    >>> episode_label("12", 0, "run/12/0"), episode_label(None, 2331, "cap/conv-7")
    ('task 12 trial 0', 'cap/conv-7')
    """
    if task_id is None:
        return trajectory_id
    return f"task {task_id}" + (f" trial {trial}" if trial is not None else "")
