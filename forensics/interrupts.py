"""Ctrl-C, told apart from the failures it causes.

SIGINT raises KeyboardInterrupt in the main thread at the next bytecode, unless native code is
running: DuckDB polls for signals itself and turns the KeyboardInterrupt it meets into an error
of its own (`InterruptException`, `RuntimeError("Query interrupted")`, or an
`InvalidInputException` that ends in "KeyboardInterrupt"), and a library may wrap one the same
way. Code that turns failures into messages (a rule file that "failed", a reader's reject, an
internal error) asks `interrupted()` first: once SIGINT arrived, a failure is the interrupt and
goes on as KeyboardInterrupt (exit code 130), never as a broken rule or a bug.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

_seen = False


def interrupted() -> bool:
    """Whether SIGINT arrived while a `watched` block ran (the outermost one resets it)."""
    return _seen


def raise_if_interrupted(exc: BaseException) -> None:
    """Raise KeyboardInterrupt (from exc) when exc is what an interrupt became."""
    if _seen and not isinstance(exc, KeyboardInterrupt):
        raise KeyboardInterrupt from exc


class _Noting:
    """A SIGINT handler that notes the signal, then runs the handler it replaced."""

    def __init__(self, previous: Callable[[int, FrameType | None], Any]) -> None:
        self.previous = previous

    def __call__(self, signum: int, frame: FrameType | None) -> Any:
        global _seen
        _seen = True
        return self.previous(signum, frame)


@contextmanager
def watched() -> Iterator[None]:
    """SIGINT is noted while the block runs, and handled as before. Signals reach the main
    thread only: elsewhere, and where SIGINT is ignored or left to the system's default, the
    block runs unwatched."""
    global _seen
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if isinstance(previous, _Noting) or not callable(previous):
        yield  # watched already (an outer block), or SIG_IGN / SIG_DFL
        return
    _seen = False
    signal.signal(signal.SIGINT, _Noting(previous))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
