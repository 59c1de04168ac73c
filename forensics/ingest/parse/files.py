"""Finding input files and reading their bytes safely: walks, gzip, size caps, damage.

Every reader reads through this module, so what it guarantees holds for every format: a UTF-8
BOM is gone, gzip is inflated transparently up to a cap, a damaged compressed stream ends the
read at the last byte that could be inflated (the damage is recorded for the file's reject, the
bytes before it stay), and a document read whole is capped in size.
"""

from __future__ import annotations

import codecs
import contextvars
import glob
import io
import os
import stat
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from forensics import progress
from forensics.limits import MIB, Limits, amount, exceeded

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

SNIFF_BYTES = 64 * 1024
_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"

# Inside a walk these are plainly not artifacts of a run: source, docs, pages, images,
# databases and archives of packaging. Listed as skipped, never read as a log.
# fmt: off
NOT_ARTIFACTS = frozenset({
    ".md", ".rst", ".py", ".pyc", ".pyi", ".ipynb", ".c", ".h", ".rs", ".go", ".java", ".js",
    ".ts", ".css", ".scss", ".html", ".htm", ".svg", ".png", ".jpg", ".jpeg", ".gif", ".webp",
    ".bmp", ".ico", ".pdf", ".mp3", ".mp4", ".wav", ".parquet", ".duckdb", ".db", ".sqlite",
    ".sqlite3", ".whl", ".egg", ".so", ".dylib", ".dll", ".exe", ".toml", ".cfg", ".ini",
    ".lock",
})
# fmt: on


class InputError(Exception):
    """A path the user named does not exist or matches nothing (exit code 2)."""


class TooLarge(Exception):
    """A file over a size cap: the file is rejected, the scan goes on."""


@dataclass
class _Scope:
    """One file's read: its limits, the damage found, what its budgets have spent so far."""

    limits: Limits
    damage: list[str] = field(default_factory=list)
    # The most one read of the file's own gzip stream inflated (readers may read a file twice:
    # the same bytes, counted once), and what its contents inflated on top (members, bodies).
    stream_inflated: int = 0
    contents_inflated: int = 0
    # YAML nodes visited again through aliases, in every document of the file.
    alias_visits: int = 0
    # Records (turns, rejects) the reader added, while it runs (see counting_records).
    counting: bool = False
    records: int = 0

    def note(self, reason: str) -> None:
        if reason not in self.damage:  # a file read twice finds its damage twice
            self.damage.append(reason)


_SCOPE: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar("scope", default=None)


def _scope() -> _Scope:
    scope = _SCOPE.get()
    if scope is None:  # a read outside ingest's driver (a tool, a test): defaults, then dropped
        scope = _Scope(Limits())
    return scope


def limits() -> Limits:
    """The limits of the file being read."""
    return _scope().limits


def over(field_name: str) -> str:
    """`4096 MiB (the decompression cap, --max-decompressed-mb)`: a budget of the file being
    read, as its reject names it."""
    return f"{amount(limits(), field_name)} ({exceeded(field_name)})"


@contextmanager
def reading(limits: Limits) -> Iterator[list[str]]:
    """Reads of one file under these limits; yields the damage found (a list of reasons)."""
    scope = _Scope(limits)
    token = _SCOPE.set(scope)
    try:
        yield scope.damage
    finally:
        _SCOPE.reset(token)


class _Damaged(Exception):
    pass


class _Gunzip(io.RawIOBase):
    """gzip inflated incrementally: every byte before damage is delivered, then end of file,
    with the damage kept in `damage`.

    gzip.GzipFile raises on a truncated stream without handing over what it had inflated in
    that call, and a buffered reader drops what it had gathered when its raw stream raises;
    zlib's decompressor fed in small pieces, and damage reported as end of file, lose at most
    one piece. The file's decompression budget ends the stream the same way: the reader
    finishes what it read (a capture's linked calls become episodes) and the file's reject
    says where the read stopped.
    """

    _PIECE = 4 * 1024  # compressed bytes fed at a time: what damage can cost at most
    _OUT = 1024 * 1024  # inflated bytes per step: a bomb never inflates all at once

    def __init__(self, raw: BinaryIO, scope: _Scope) -> None:
        self._raw = raw
        self._scope = scope
        self._out = 0
        self._inflater = zlib.decompressobj(wbits=31)
        self._pending = b""
        self._done = False
        self.damage: str | None = None

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._raw.close()
        super().close()

    def readinto(self, buffer: WriteableBuffer, /) -> int:
        while not self._pending and not self._done:
            self._pending = self._inflate()
        view = memoryview(buffer)  # what BufferedReader hands in already is one
        n = min(len(view), len(self._pending))
        view[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def _inflate(self) -> bytes:
        try:
            return self._inflate_piece()
        except _Damaged as exc:
            self._done = True
            self.damage = str(exc)
            return b""

    def _inflate_piece(self) -> bytes:
        inflater = self._inflater
        if inflater.eof:  # a member ended: what follows is another member or the end
            # Checked before unconsumed_tail: a member that ends on the call whose output
            # limit was reached leaves its leftover input in unused_data and a stale copy in
            # unconsumed_tail, and feeding that tail to the finished inflater returned
            # nothing, for ever (a gzip of members of 8 MiB each hung the scan).
            piece = inflater.unused_data or self._raw.read(self._PIECE)
            if not piece:
                self._done = True
                return b""
            if not piece.startswith(_GZIP_MAGIC[: len(piece)]):
                raise _Damaged("data after the end of the gzip stream is not gzip")
            self._inflater = inflater = zlib.decompressobj(wbits=31)
        elif inflater.unconsumed_tail:
            piece = inflater.unconsumed_tail
        else:
            piece = self._raw.read(self._PIECE)
            if not piece:
                raise _Damaged("truncated gzip stream (it ends before its end-of-stream marker)")
        try:
            # Bounded output per call: a bomb inflates a small piece to gigabytes.
            out = inflater.decompress(piece, self._OUT)
        except zlib.error as exc:
            raise _Damaged(f"corrupt gzip stream ({exc})") from None
        scope = self._scope
        cap = scope.limits.max_decompressed_bytes - scope.contents_inflated
        if self._out + len(out) > cap:
            # Up to the budget is delivered (format detection reads the head), then the end.
            out = out[: max(0, cap - self._out)]
            self._done = True
            self.damage = (
                f"inflates to more than {over('max_decompressed_bytes')}: not read further"
            )
        self._out += len(out)
        scope.stream_inflated = max(scope.stream_inflated, self._out)
        return out


def decompression_left() -> int:
    """Bytes the contents of the file being read (ZIP members, compressed bodies) may still
    inflate to: its decompression budget, less what its own gzip stream took."""
    scope = _scope()
    used = scope.stream_inflated + scope.contents_inflated
    return max(0, scope.limits.max_decompressed_bytes - used)


def decompressed(n: int) -> None:
    """Count n bytes the file's contents inflated to against its decompression budget."""
    _scope().contents_inflated += n


@contextmanager
def counting_records() -> Iterator[None]:
    """While the file's reader runs, the records it adds count against its records cap; what
    the driver adds about the file afterwards (its damage, a failure) is always kept."""
    scope = _scope()
    scope.counting = True
    try:
        yield
    finally:
        scope.counting = False


def keep_records(n: int, line: int | None) -> bool:
    """Whether n more records of the file being read are kept: past its records cap they
    are read and counted but not kept (a flood of broken lines would otherwise hold a reject
    each), and the file gets one reject saying so, from the first record not kept."""
    scope = _SCOPE.get()
    if scope is None or not scope.counting:
        return True
    scope.records += n
    if scope.records <= scope.limits.max_records:
        return True
    if scope.records - n <= scope.limits.max_records:  # the first record past the cap
        where = f" from line {line:,}" if line is not None else ""
        scope.note(
            f"more than {over('max_records')} records in this file: the records{where} on "
            "were read but not kept"
        )
    return False


def alias_visits(n: int) -> int:
    """Count n YAML alias visits of the file; the visits its budget has left."""
    scope = _scope()
    scope.alias_visits += n
    return scope.limits.max_yaml_aliases - scope.alias_visits


# `scan -` spools standard input to a file of this name (tools/stdin.py); when its stdin cap
# cut the input short, a note of this name beside it says so, for every process that reads
# the spool (a --workers shard too).
SPOOL = "<stdin>"
_CUT = SPOOL + ".cut"


def mark_cut(spool: Path, reason: str) -> None:
    """Say that this spool holds only the start of its input, and why."""
    (spool.parent / _CUT).write_text(reason, encoding="utf-8")


def note_cut(path: Path) -> None:
    """A read of a spool cut short: the file's reject says so (once, however often it is read)."""
    if path.name == SPOOL:
        try:
            reason = (path.parent / _CUT).read_text(encoding="utf-8")
        except OSError:
            return
        _scope().note(reason)


def open_binary(path: Path, *, sniffing: bool = False) -> io.BufferedReader:
    """The file's bytes: gunzipped when it starts with the gzip magic, without a UTF-8 BOM.
    sniffing: only the head is read, for format detection (a cut spool is not yet reported)."""
    if not sniffing:
        note_cut(path)
    f = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    progress.opened(f)
    stream = f
    if f.peek(2)[:2] == _GZIP_MAGIC:
        stream = io.BufferedReader(_Gunzip(f, _scope()), buffer_size=64 * 1024)
    if _peek(stream, 3) == _BOM:
        stream.read(3)
    return stream


def _peek(stream: io.BufferedReader, n: int) -> bytes:
    return stream.peek(n)[:n]


def _record_damage(stream: io.BufferedReader, where: str) -> None:
    """After end of file: a damaged gzip stream says so, for the file's reject."""
    damage = getattr(getattr(stream, "raw", None), "damage", None)
    if damage:
        _scope().note(f"{damage} {where}")


def head(path: Path, size: int = SNIFF_BYTES) -> bytes:
    """The first bytes, for format detection (damage after them does not matter here)."""
    out = b""
    with open_binary(path, sniffing=True) as f:
        while len(out) < size and (chunk := f.read(size - len(out))):
            out += chunk
        if not out:
            _record_damage(f, "at its start")
    return out


def read_text(path: Path) -> str:
    """The whole file as text, for formats that are one document; capped in size."""
    cap = _scope().limits.max_document_bytes
    if os.stat(path).st_size > cap:
        raise TooLarge(_too_large())
    with open_binary(path) as f:
        parts: list[bytes] = []
        total = 0
        while chunk := f.read(min(8 * MIB, cap + 1 - total)):
            parts.append(chunk)
            total += len(chunk)
            if total > cap:
                raise TooLarge(_too_large())
        _record_damage(f, f"after {total:,} bytes; the document was read up to there")
        return b"".join(parts).decode("utf-8", errors="replace")


class TextStream:
    """A document read a piece at a time, for readers that walk it front to back: what
    read_text returns, without holding the whole file (the same cap, decoding and damage).

    `text` is a window of the document starting at absolute offset `base`; `more()` appends
    the next piece and `drop(pos)` forgets what comes before `pos` of the window.
    """

    PIECE = 4 * MIB

    def __init__(self, path: Path) -> None:
        self._cap = _scope().limits.max_document_bytes
        if os.stat(path).st_size > self._cap:
            raise TooLarge(_too_large())
        self._file = open_binary(path)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._total = 0
        self.text = ""
        self.base = 0
        self.eof = False

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> TextStream:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def more(self) -> bool:
        """Append the next piece (at least as long as the window, so re-reading a value that
        spans pieces costs at most twice its length); False at the end of the document."""
        if self.eof:
            return False
        want = max(self.PIECE, len(self.text))
        chunk = self._file.read(min(want, self._cap + 1 - self._total))
        self._total += len(chunk)
        if self._total > self._cap:
            raise TooLarge(_too_large())
        if not chunk:
            self.eof = True
            _record_damage(
                self._file, f"after {self._total:,} bytes; the document was read up to there"
            )
            self.text += self._decoder.decode(b"", final=True)
            return False
        self.text += self._decoder.decode(chunk)
        return True

    def rest(self) -> None:
        """Read to the end of the document."""
        while self.more():
            pass

    def drop(self, pos: int) -> None:
        self.base += pos
        self.text = self.text[pos:]


def _too_large() -> str:
    return f"a document larger than {over('max_document_bytes')} is not read whole"


def long_line() -> str:
    """The reject of a line over the line cap (iter_lines gives None for it)."""
    return f"line longer than {over('max_line_bytes')}; skipped"


def iter_lines(path: Path) -> Iterator[tuple[int, str | None]]:
    """(line number, text) for each line; text is None for a line over the line cap.

    A line that long is skipped without being held in memory, so a single runaway line can not
    exhaust memory; the caller reports it. A damaged compressed stream ends the lines at the
    last complete one; the damage is recorded for the file's reject.
    """
    with open_binary(path) as stream:
        lineno = 0
        for number, text in _lines(stream, _scope().limits.max_line_bytes):
            lineno = number
            yield number, text
        _record_damage(stream, f"after line {lineno}; the lines before it were read")


_BLOCK = 1 * MIB


def _lines(stream: io.BufferedReader, cap: int) -> Iterator[tuple[int, str | None]]:
    """The lines of a stream, a block at a time: a block's complete lines are decoded and split
    at once (UTF-8 never has a newline byte inside a character, so this decodes as line by line
    would). Lines of `cap` bytes or more (newline excluded) are None and not held.

    read1 takes what one read of the underlying stream gives: when it raises (a decompression
    cap), every line delivered before it has been handed out, as readline would have."""
    lineno = 0
    carry: list[bytes] = []  # the start of a line whose end is not read yet
    held = 0
    skipping = False  # inside a line over the cap: its bytes are dropped up to its end
    while block := stream.read1(_BLOCK):
        if skipping:
            nl = block.find(b"\n")
            if nl < 0:
                continue
            block, skipping = block[nl + 1 :], False
        last = block.rfind(b"\n")
        if last < 0:
            if block:
                carry.append(block)
                held += len(block)
        else:
            complete = b"".join([*carry, block[:last]]) if carry else block[:last]
            rest = block[last + 1 :]
            carry, held = ([rest], len(rest)) if rest else ([], 0)
            if len(complete) < cap:
                text = complete.decode("utf-8", errors="replace")
                lines = text.split("\n")
                if "\r" in text:
                    lines = [line.rstrip("\r") for line in lines]
                for line in lines:
                    lineno += 1
                    yield lineno, line
            else:
                for piece in complete.split(b"\n"):
                    lineno += 1
                    too_long = len(piece) >= cap
                    yield (
                        lineno,
                        None if too_long else piece.decode("utf-8", "replace").rstrip("\r"),
                    )
        if held >= cap:
            lineno += 1
            yield lineno, None
            carry, held, skipping = [], 0, True
    if held:
        yield lineno + 1, b"".join(carry).decode("utf-8", errors="replace").rstrip("\r")


# --- which files a scan reads -----------------------------------------------------------------


# Why a directory named as an input is rejected: nothing in it. It is no file (summaries count
# the files read, report.model) though it is listed with them.
EMPTY_DIRECTORY = "directory holds no file to read"


@dataclass
class Expansion:
    """What the paths named: files to read, entries skipped in walks, entries that can't be."""

    files: list[Path] = field(default_factory=list)
    # (path, reason): not artifacts, hidden, the tool's own outputs. Listed, never read.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # (path, reason): named or found but unreadable as a file (FIFO, device, dangling link).
    rejected: list[tuple[str, str]] = field(default_factory=list)


def expand(paths: list[str], exclude: list[Path] | None = None) -> Expansion:
    """Files named by paths, directories (walked) and globs; each file once, sorted.

    exclude: the tool's own outputs (report directory, --json targets, …), skipped in walks.
    """
    out = Expansion()
    excluded = {os.path.realpath(p) for p in exclude or []}
    found: list[tuple[Path, str]] = []  # (path, its real path)
    for raw in paths:
        matches = [Path(m) for m in _glob(raw)] if glob.has_magic(raw) else []
        if not matches:
            p = Path(raw)
            if not os.path.lexists(p):
                raise InputError(f"{raw}: no such file or directory")
            matches = [p]
        for p in sorted(matches):
            _named(p, found, out, excluded)
    # The same file reached by two spellings (relative, absolute, a symlink) is read once.
    unique: dict[str, Path] = {}
    for p, real in sorted(found, key=lambda f: os.path.normpath(f[0])):
        unique.setdefault(real, p)
    out.files = sorted(unique.values(), key=os.path.normpath)
    out.skipped.sort()
    out.rejected.sort()
    return out


def _glob(pattern: str) -> list[str]:
    """glob.glob(pattern, recursive=True), except that `**` does not descend into symbolic
    links to directories, as the walk of a directory does not: glob follows them, so a link
    back up (`logs/again -> ..`) makes `logs/**/*.json` run until the path is too long, and two
    such links make it run for ever. A linked directory is still matched (`**` at the end), and
    a pattern part that is not `**` follows links as glob does (it can not loop)."""
    parts = pattern.split(os.sep)
    if "**" not in parts:
        return glob.glob(pattern)
    at = parts.index("**")
    rest = parts[at + 1 :]
    if at == 0:
        bases = [""]  # the current directory; matches are named without a leading ./
    else:
        base = os.sep.join(parts[:at]) or os.sep
        bases = glob.glob(base) if glob.has_magic(base) else [base]
    out: set[str] = set()
    for base in bases:
        if base and not os.path.isdir(base):
            continue
        if base and not rest:
            out.add(base)  # `a/**` matches a/ itself
        top = base or os.curdir
        for folder, dirs, names in os.walk(top):  # followlinks=False: a linked folder is a leaf
            dirs[:] = [d for d in dirs if not d.startswith(".")]  # `**` skips hidden folders
            if not base:
                folder = folder[len(top) + 1 :]
            if rest:
                escaped = glob.escape(folder) if folder else ""
                out.update(_glob(os.path.join(escaped, *rest)))
            else:
                visible = [n for n in (*dirs, *names) if not n.startswith(".")]
                out.update(os.path.join(folder, n) for n in visible)
    return sorted(out)


def _named(p: Path, found: list[tuple[Path, str]], out: Expansion, excluded: set[str]) -> None:
    kind = _kind(p)
    if kind == "dir":
        before = len(found) + len(out.rejected)
        _walk(p, found, out, excluded)
        if len(found) + len(out.rejected) == before:
            out.rejected.append((str(p), EMPTY_DIRECTORY))
    elif kind == "file":
        found.append((p, os.path.realpath(p)))
    else:
        out.rejected.append((str(p), kind))


def _kind(p: Path) -> str:
    """'file', 'dir', or why the entry is neither."""
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        return "dangling symbolic link" if os.path.islink(p) else "no such file"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file" if os.access(p, os.R_OK) else "cannot read: permission denied"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO), not a file: not read (it could block the scan)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a file: not read"
    return "not a regular file: not read"


def _walk(root: Path, found: list[tuple[Path, str]], out: Expansion, excluded: set[str]) -> None:
    def unreadable(exc: OSError) -> None:
        out.rejected.append((str(exc.filename or root), f"cannot read: {exc.strerror or exc}"))

    # Symlinked directories are not followed (a link back up would loop); files through links
    # are read, once.
    for top, dirs, names in os.walk(root, onerror=unreadable):
        # An entry's real path is its directory's joined with its name unless it is a link
        # itself: one realpath per directory, not one per file (each walks every component).
        real_top = os.path.realpath(top)
        for d in sorted(dirs):
            path = os.path.join(top, d)
            reason = _skip_reason(os.path.realpath(path), d, excluded, is_dir=True)
            if reason is None and os.path.islink(path):
                reason = "a symbolic link to a directory (not followed)"
            if reason is not None:
                out.skipped.append((os.path.normpath(path), reason))
                dirs.remove(d)
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(top, name)
            link = os.path.islink(path)
            real = os.path.realpath(path) if link else os.path.join(real_top, name)
            reason = _skip_reason(real, name, excluded, is_dir=False)
            kind = _kind(Path(path)) if reason is None else ""
            if kind == "file":
                found.append((Path(path), real))
            elif kind.startswith("cannot read"):
                out.rejected.append((os.path.normpath(path), kind))
            else:
                out.skipped.append((os.path.normpath(path), reason or kind))


def _skip_reason(real: str, name: str, excluded: set[str], is_dir: bool) -> str | None:
    if name.startswith("."):
        return "hidden"
    if real in excluded:
        return "an output of this scan"
    if is_dir:
        return None
    ext = os.path.splitext(name)[1].lower()
    if ext == ".gz":
        ext = os.path.splitext(name[:-3])[1].lower()
    if ext in NOT_ARTIFACTS:
        return f"not a run artifact ({ext} file)"
    return None
