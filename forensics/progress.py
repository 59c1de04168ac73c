"""Progress of a long scan on stderr: files, MB and turns read, the rate and the time reading
has left, then the stage the scan is in with the turns it read.

Ingest tells this module what it is doing (`begin`, `file`, `opened`, `stage`); with no meter
switched on (the library, tests, CI, --quiet, stderr not a terminal) each call is one global
lookup and returns. The command line switches a meter on around a scan (`shown`); a thread
then redraws one line on stderr four times a second, starting only after the first second, so
a quick scan prints nothing at all, and erases it at the end.

Bytes are counted where the reader is: the meter keeps the descriptor of the file being read
and asks the operating system for its offset, so no reader has to report, and a gzip file
counts its compressed bytes, as its size on disk does.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

MB = 1_000_000


class Meter:
    """Counts of a running scan, and the line that shows them."""

    def __init__(
        self, stream: IO[str], width: int = 80, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.stream = stream
        self.width = width
        self.clock = clock
        self.started = clock()
        self.files_total = 0
        self.bytes_total = 0
        self.files_done = 0
        self.bytes_done = 0  # of the files finished
        self.current_size = 0
        self.stream_of_file: Any = None  # the raw file object a reader has open
        self.offset = 0  # the furthest offset seen in the current file
        self.in_file = False
        self.turns: Callable[[], int] = lambda: 0
        self.stage_name = "reading"
        self.drawn = False
        self._lock = threading.Lock()
        self.stop = threading.Event()
        self.drawing = threading.Lock()

    def begin(self, paths: list[Path]) -> None:
        sizes = []
        for p in paths:
            try:
                sizes.append(p.stat().st_size)
            except OSError:
                sizes.append(0)
        self.files_total, self.bytes_total = len(paths), sum(sizes)

    def file(self, size: int) -> None:
        """A new file starts: the previous one is done."""
        with self._lock:
            if self.in_file:
                self.files_done += 1
                self.bytes_done += self.current_size
            self.current_size, self.stream_of_file, self.offset = size, None, 0
            self.in_file = True

    def read_bytes(self) -> int:
        """Bytes read so far: the finished files and the furthest offset in the current one
        (a reader that reads a file twice, head then whole, never moves it back)."""
        with self._lock:
            done, f, size = self.bytes_done, self.stream_of_file, self.current_size
        if f is not None and not f.closed:
            # Asked of the descriptor, not the file object: that one belongs to the reader's
            # thread. A descriptor closed meanwhile raises, and the offset stays as it was.
            with suppress(OSError, ValueError):
                self.offset = max(self.offset, min(size, os.lseek(f.fileno(), 0, os.SEEK_CUR)))
        return done + self.offset

    def line(self) -> str:
        elapsed = max(1e-6, self.clock() - self.started)
        turns = self.turns()
        if self.stage_name != "reading":
            read = f" · {turns:,} turns read" if turns else ""
            return f"forensics: {self.stage_name}{read} … {elapsed:.0f} s"
        got = self.read_bytes()
        rate = got / elapsed
        parts = [
            f"file {min(self.files_done + 1, self.files_total):,}/{self.files_total:,}",
            f"{got / MB:,.0f}/{self.bytes_total / MB:,.0f} MB",
            f"{turns:,} turns",
            f"{rate / MB:,.1f} MB/s",
        ]
        # The bytes left say how long reading takes, not the scan: checking the rules and the
        # diagnosis follow, and a file read whole is parsed after its last byte is in. So the
        # estimate is named for what it measures, and not shown once it would say 0 s.
        left = (self.bytes_total - got) / rate if rate > 0 else 0.0
        if left >= 1:
            parts.append(f"reading ~{_duration(left)} left")
        return ("forensics: " + " · ".join(parts))[: max(10, self.width - 1)]

    def draw(self) -> None:
        text = self.line()
        with self.drawing:
            if self.stop.is_set():
                return
            self.stream.write("\r\x1b[2K" + text)
            self.stream.flush()
            self.drawn = True

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


def _duration(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 60}:{s % 60:02d}" if s >= 60 else f"{s} s"


_meter: Meter | None = None


def begin(paths: list[Path]) -> None:
    if _meter is not None:
        _meter.begin(paths)


def file(path: Path) -> None:
    if _meter is not None:
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        _meter.file(size)


def opened(stream: Any) -> None:
    """A reader opened the current file (its raw file object)."""
    if _meter is not None:
        _meter.stream_of_file = stream


def counting(turns: Callable[[], int]) -> None:
    """How to count the turns read so far."""
    if _meter is not None:
        _meter.turns = turns


def stage(name: str) -> None:
    """Reading is over: what the scan does now (checking rules, diagnosing, writing)."""
    if _meter is not None:
        _meter.file(0)
        _meter.in_file = False
        _meter.stage_name = name


def interrupt() -> None:
    """Something else is about to be printed on the terminal (an error): the line goes first,
    and is not drawn again."""
    if _meter is not None:
        _meter.stop.set()
        with _meter.drawing:
            _meter.clear()
            _meter.drawn = False


def wanted(stream: IO[str], quiet: bool, env: Mapping[str, str] | None = None) -> bool:
    """A meter only where a person watches: a terminal, not CI, not --quiet, not TERM=dumb."""
    environ = os.environ if env is None else env
    if quiet or environ.get("CI") or environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def shown(
    stream: IO[str] | None = None, width: int = 80, delay: float = 1.0, interval: float = 0.25
) -> Iterator[Meter]:
    """A meter drawn on stream (stderr) while the block runs; erased when it ends."""
    global _meter
    meter = Meter(stream or sys.stderr, width)
    stop = meter.stop

    def tick() -> None:
        if stop.wait(delay):
            return
        while not stop.is_set():
            meter.draw()
            stop.wait(interval)

    thread = threading.Thread(target=tick, name="forensics-progress", daemon=True)
    _meter = meter
    thread.start()
    try:
        yield meter
    finally:
        stop.set()
        thread.join()
        _meter = None
        with meter.drawing:
            meter.clear()
