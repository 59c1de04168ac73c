"""Members of a ZIP container (Inspect AI `.eval` logs), read one at a time under the caps.

Where a member's rows say they come from: `source_path` is `<archive>!<member>` (e.g.
`logs/run.eval!samples/1_epoch_1.json`), `source_line` the line inside the member, and a
reject adds the JSON path inside the member (`$.messages[3]`). One convention for every
container format.

Inspect AI writes members zstd-compressed (ZIP method 93) since 0.3.206; Python's zipfile reads
only stored and deflated members before 3.14, so zstd members are inflated here with the
`zstandard` package (or the standard library's `compression.zstd` on 3.14+). Without either,
each such member is rejected with that reason; the others are read.
"""

from __future__ import annotations

import io
import struct
import sys
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from forensics.ingest.parse import files
from forensics.schema import ARCHIVE_MEMBER_SEPARATOR

SEPARATOR = ARCHIVE_MEMBER_SEPARATOR
ZIP_MAGIC = b"PK\x03\x04"
ZSTD_METHOD = 93
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")


def member_path(archive: str, member: str) -> str:
    return f"{archive}{SEPARATOR}{member}"


def first_member_name(head: bytes) -> str | None:
    """Name of the first member from the local header at the start of a ZIP file."""
    if len(head) < _LOCAL_HEADER.size or not head.startswith(ZIP_MAGIC):
        return None
    name_len = struct.unpack_from("<H", head, 26)[0]
    raw = head[30 : 30 + name_len]
    return raw.decode("utf-8", errors="replace") if len(raw) == name_len else None


# What zipfile raises on an archive whose central directory it can not read (a cut or
# damaged file).
UNREADABLE = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, struct.error)


@dataclass
class Member:
    name: str
    data: bytes | None  # None: not read, `problem` says why
    problem: str | None = None


_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # a central directory entry (zipfile's layout)
_UTF8_NAME = 0x800  # general purpose flag bit 11: the name is UTF-8


class _NamesUnclaimed:
    """A read-only view of an archive in which the central-directory entries that claim a
    UTF-8 name and do not hold one lose the claim: zipfile then reads those names as cp437
    instead of refusing the whole archive. `bad` maps each such entry's position in the
    directory to its name as shown (U+FFFD for the bytes that are not UTF-8)."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        # zipfile's own reading of the end records (private, so any change there makes this
        # raise, and the archive is as unreadable as before; typeshed does not declare them).
        z: Any = zipfile
        end = z._EndRecData(f)
        if not end:
            raise zipfile.BadZipFile("File is not a zip file")
        size = end[z._ECD_SIZE]
        start = end[z._ECD_LOCATION] - size
        if end[z._ECD_SIGNATURE] == z.stringEndArchive64:
            start -= z.sizeEndCentDir64 + z.sizeEndCentDir64Locator
        f.seek(start)
        directory = bytearray(f.read(size))
        self.bad: dict[int, str] = {}
        pos = index = 0
        while pos + _CENTRAL.size <= len(directory):
            fields = _CENTRAL.unpack_from(directory, pos)
            if fields[0] != b"PK\x01\x02":
                break
            flags, lengths = fields[5], fields[12:15]
            name = bytes(directory[pos + _CENTRAL.size : pos + _CENTRAL.size + lengths[0]])
            if flags & _UTF8_NAME:
                try:
                    name.decode("utf-8")
                except UnicodeDecodeError:
                    struct.pack_into("<H", directory, pos + 8, flags & ~_UTF8_NAME)
                    self.bad[index] = name.decode("utf-8", errors="replace")
            pos += _CENTRAL.size + sum(lengths)
            index += 1
        self._start, self._directory = start, bytes(directory)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def seekable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        at = self._f.tell()
        data = self._f.read(n)
        lo = max(at, self._start)
        hi = min(at + len(data), self._start + len(self._directory))
        if lo < hi:  # the directory, as patched
            patch = self._directory[lo - self._start : hi - self._start]
            data = data[: lo - at] + patch + data[hi - at :]
        return data


@contextmanager
def _opened(f: BinaryIO) -> Iterator[tuple[zipfile.ZipFile, dict[int, str]]]:
    """The archive, and the members (by position in its directory) whose names are not the
    UTF-8 they claim to be, each with its name as shown: those are lost, not the archive."""
    try:
        archive, bad = zipfile.ZipFile(f), {}
    except UnicodeDecodeError as exc:
        try:
            view = _NamesUnclaimed(f)
            archive, bad = zipfile.ZipFile(view), view.bad
        except Exception:
            raise exc from None
    with archive:
        yield archive, bad


def _zstd_reader(raw: BinaryIO) -> BinaryIO:
    if sys.version_info >= (3, 14):
        try:  # an interpreter built without libzstd has no compression.zstd
            from compression import zstd

            return zstd.ZstdFile(raw)
        except ImportError:
            pass
    import zstandard  # raises ImportError when missing: the caller says so

    # Inspect writes multi-frame streams for large members.
    return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)


def _raw_member(f: BinaryIO, info: zipfile.ZipInfo) -> bytes:
    """The compressed bytes of a member, read past its local header."""
    f.seek(info.header_offset)
    header = f.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size or not header.startswith(ZIP_MAGIC):
        raise zipfile.BadZipFile("bad local file header")
    name_len, extra_len = _LOCAL_HEADER.unpack(header)[-2:]
    f.seek(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)
    data = f.read(info.compress_size)
    if len(data) < info.compress_size:
        raise zipfile.BadZipFile("member data is cut short")
    return data


def _inflate_zstd(f: BinaryIO, info: zipfile.ZipInfo, cap: int) -> bytes:
    reader = _zstd_reader(io.BytesIO(_raw_member(f, info)))
    # Read one byte past the declared size: a member that inflates to more lies about itself
    # (a bomb), and reading stops there.
    limit = min(info.file_size, cap) + 1
    parts, size = [], 0
    while size < limit and (chunk := reader.read(min(limit - size, 8 * files.MIB))):
        parts.append(chunk)
        size += len(chunk)
    out = b"".join(parts)
    if len(out) > info.file_size:
        raise zipfile.BadZipFile("member inflates to more than its declared size")
    if len(out) != info.file_size:
        raise zipfile.BadZipFile("member inflates to less than its declared size")
    if zlib.crc32(out) != info.CRC:  # zipfile's own check
        raise zipfile.BadZipFile("CRC check failed")
    return out


def members(
    path: Path, first: tuple[str, ...] = (), wanted: Callable[[str], bool] = lambda _: True
) -> Iterator[Member]:
    """The wanted members of the archive, the names in `first` first, then in the order of
    the central directory, with their bytes or why they could not be had. Raises one of
    UNREADABLE when the archive itself is unreadable (no central directory), files.TooLarge
    once the members inflated so far pass the decompression cap (a bomb of many members)."""
    cap = files.limits().max_document_bytes
    files.note_cut(path)
    with open(path, "rb") as f, _opened(f) as (archive, bad):
        infos = archive.infolist()
        shown = {id(info): bad[i] for i, info in enumerate(infos) if i in bad}
        rank = {name: i for i, name in enumerate(first)}
        infos.sort(key=lambda info: rank.get(info.filename, len(first)))
        for info in infos:
            name = shown.get(id(info), info.filename)
            if info.is_dir() or not wanted(name):
                continue
            if id(info) in shown:
                yield Member(name, None, "member name is not the UTF-8 its entry says: not read")
                continue
            if info.file_size > cap:
                yield Member(
                    name,
                    None,
                    f"member inflates to {info.file_size:,} bytes, over "
                    f"{files.over('max_document_bytes')}",
                )
                continue
            # The declared size bounds what a member inflates to (zipfile and _inflate_zstd
            # stop there), so it is counted before the member is read.
            if info.file_size > files.decompression_left():
                raise files.TooLarge(
                    f"members inflate to more than {files.over('max_decompressed_bytes')}: "
                    "not read further"
                )
            files.decompressed(info.file_size)
            try:
                if info.compress_type == ZSTD_METHOD:
                    data = _inflate_zstd(f, info, cap)
                else:
                    data = archive.read(info)
            except ImportError:
                yield Member(
                    name,
                    None,
                    "zstd-compressed member (ZIP method 93) and no zstd "
                    "decoder installed: pip install zstandard",
                )
                continue
            except NotImplementedError as exc:
                yield Member(name, None, f"unsupported ZIP compression: {exc}")
                continue
            except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
                yield Member(name, None, f"damaged member: {exc}")
                continue
            except Exception as exc:  # zlib.error, zstandard.ZstdError: damage, not a bug
                yield Member(name, None, f"damaged member ({type(exc).__name__}: {exc})")
                continue
            yield Member(name, data)
