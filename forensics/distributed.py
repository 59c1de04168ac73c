"""The scan spread over processes (`scan --workers N`) or a Ray cluster (`scan --ray`).

Files are the shards: the sorted file list is cut into contiguous ranges of about equal bytes,
and each task runs the pipeline's own stages (pipeline.expand, read, check) on its range and
writes the four tables as Parquet under the shard directory, Hive-partitioned by run
(`turns/run=<run>/shard-00003-0.parquet`; rejects, which have no run, one file per shard). The
driver reads them back in shard order with DuckDB, diagnoses the whole (pipeline.diagnose),
after what it read itself (the entries the walk could not read), and the outputs are
those of a scan in one process, byte for byte.

What keeps them equal: linking happens inside a file, so a file's conversations are always
whole in its shard; trajectory ids, trial numbers and rule findings depend only on the run they
belong to, so a run must sit in one shard. A task reports the runs it read and the directories
of the run-metadata sidecars it met; where a run spans two shards, or a sidecar's directory
holds files of another shard, or two shards hold the same episode (a console log and its
results file or capture, which one process fuses into one trajectory: `ingest.fusion`), the
driver merges those shards (the whole range between them) and runs the merged shard again.
Byte ranges of one large JSONL file are not split: a single file is one task.

Inputs and the shard directory may be local paths or object-store URLs (`s3://`, `gs://`, …,
through pyarrow.fs): a task copies the objects of its shard to a local temporary directory,
reads them there, and names them by their URL in every table.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from multiprocessing import get_context
from pathlib import Path
from urllib.parse import quote, urlsplit

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from forensics import ingest, pipeline, schema
from forensics.check import enrich, fingerprint
from forensics.config import Settings
from forensics.ingest import fusion
from forensics.ingest.formats import sidecars
from forensics.ingest.parse import files as ingest_files
from forensics.ingest.rows import clean_text
from forensics.redact import redact_name

TABLES = ("turns", "trajectories", "findings", "rejects")
_ORDER = "_order"  # row position within its shard: the driver restores the one-process order
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


def is_url(path: str) -> bool:
    return bool(_URL.match(path)) and not path.lower().startswith("file://")


@dataclass
class Shard:
    index: int
    files: list[str]  # paths or URLs, in scan order


@dataclass
class ShardDone:
    index: int
    files: list[ingest.FileReport]
    not_checked: dict[str, dict[str, list[str]]]
    runs: set[str]
    sidecar_dirs: set[str]  # resolved directories of the run-metadata sidecars read
    dirs: set[str]  # resolved directories of the shard's files
    # fusion.signature of the shard's trajectories: what episode matching needs
    fusion: tuple[pl.DataFrame, pl.DataFrame] | None = None


# --- the task -----------------------------------------------------------------------------------


def _filesystem(url: str) -> tuple[pafs.FileSystem, str]:
    if is_url(url):
        return pafs.FileSystem.from_uri(url)
    return pafs.LocalFileSystem(), os.path.abspath(url)


def _run_key(run_id: str) -> str:
    """The run's partition directory: readable where the id allows, unique always."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", run_id)[:60] or "_"
    return f"{slug}-{hashlib.sha256(run_id.encode()).hexdigest()[:8]}"


def _local(into: Path, scheme: str, path: str) -> Path:
    """Where the copy of an object goes: its key's folders under `into`, except that a key
    may hold `..` or `.` (a name in a bucket, not a step up): those segments are spelled out,
    so no key writes outside `into`."""
    parts = [p if p not in (".", "..") else p.replace(".", "%2E") for p in path.split("/") if p]
    return into.joinpath(scheme, *parts)


def _fetch(urls: list[str], into: Path) -> dict[str, str]:
    """Copies of the objects under `into`; local path -> URL."""
    names: dict[str, str] = {}
    for url in urls:
        fs, path = _filesystem(url)
        scheme = url.split("://", 1)[0]
        local = _local(into, scheme, path)
        local.parent.mkdir(parents=True, exist_ok=True)
        with fs.open_input_stream(path) as src, open(local, "wb") as dst:
            shutil.copyfileobj(src, dst, 1024 * 1024)
        names[str(local)] = url
    return names


def _renamed(frame: pl.DataFrame, names: dict[str, str]) -> pl.DataFrame:
    """Local copies of fetched objects named by their URLs, wherever a table names a file."""
    if not names:
        return frame
    if "source_path" in frame.columns:
        frame = frame.with_columns(pl.col("source_path").replace(names))
    if "sources" in frame.columns:
        frame = frame.with_columns(pl.col("sources").list.eval(pl.element().replace(names)))
    if "fused_from" in frame.columns:  # path:line
        path = pl.col("fused_from").str.replace(r":\d+$", "")
        line = pl.col("fused_from").str.extract(r"(:\d+)$")
        frame = frame.with_columns(fused_from=path.replace(names) + line)
    return frame


def run_shard(
    shard: Shard, out: str, rules_dirs: Sequence[str], settings: Settings | None
) -> ShardDone:
    """Read and check one shard (pipeline.expand, read, check); its tables go to `out` as
    Parquet."""
    settings = settings or Settings()
    with tempfile.TemporaryDirectory(prefix="forensics-shard-") as tmp:
        remote = [f for f in shard.files if is_url(f)]
        fetched = _fetch(remote, Path(tmp)) if remote else {}
        by_url = {url: local for local, url in fetched.items()}
        local_files = [by_url.get(f, f) for f in shard.files]
        rules = pipeline.load_rules(rules_dirs, settings)
        result = pipeline.check(
            pipeline.read(pipeline.expand(local_files, settings), settings), rules
        )
        names = {redact_name(clean_text(k)): v for k, v in fetched.items()}
        turns = result.turns
        assert isinstance(turns, pl.DataFrame)  # read without a store: the turns in memory
        frames = {
            "turns": turns,
            "trajectories": result.trajectories,
            "findings": result.findings,
            "rejects": result.rejects,
        }
        fs, base = _filesystem(out)
        for name, frame in frames.items():
            _write(_renamed(frame, names), name, shard.index, fs, base)
        reports = [replace(r, path=names.get(r.path, r.path)) for r in result.files]
        not_checked = {names.get(k, k): v for k, v in result.not_checked.items()}
        sidecar_dirs = {
            _folder(f)
            for f, r in zip(shard.files, _reports_of(local_files, result.files), strict=True)
            if r is not None and r.format == sidecars.FORMAT
        }
        runs = set(result.trajectories["run_id"].to_list())
        dirs = {_folder(f) for f in shard.files}
        signature = fusion.signature(turns, result.trajectories) if settings.fuse else None
        return ShardDone(shard.index, reports, not_checked, runs, sidecar_dirs, dirs, signature)


def _folder(name: str) -> str:
    return name.rsplit("/", 1)[0] if is_url(name) else os.path.dirname(os.path.realpath(name))


def _reports_of(
    paths: list[str], reports: list[ingest.FileReport]
) -> list[ingest.FileReport | None]:
    by_name = {r.path: r for r in reports}
    return [by_name.get(redact_name(clean_text(str(Path(p))))) for p in paths]


def _write(frame: pl.DataFrame, name: str, index: int, fs: pafs.FileSystem, base: str) -> None:
    table = frame.with_row_index(_ORDER).with_columns(pl.col(_ORDER).cast(pl.Int64)).to_arrow()
    where = f"{base.rstrip('/')}/{name}"
    template = f"shard-{index:05d}-{{i}}.parquet"
    if name == "rejects" or table.num_rows == 0:
        fs.create_dir(where, recursive=True)
        ds.write_dataset(
            table,
            where,
            format="parquet",
            filesystem=fs,
            basename_template=template,
            existing_data_behavior="overwrite_or_ignore",
        )
        return
    runs = [_run_key(r) for r in table.column("run_id").to_pylist()]
    table = table.append_column("run", pa.array(runs, pa.string()))
    ds.write_dataset(
        table,
        where,
        format="parquet",
        filesystem=fs,
        partitioning=ds.partitioning(pa.schema([("run", pa.string())]), flavor="hive"),
        basename_template=template,
        existing_data_behavior="overwrite_or_ignore",
    )


# --- the driver ---------------------------------------------------------------------------------


def object_url(scheme: str, path: str, query: str = "") -> str:
    """The URL of an object from its path in the store: percent-encoded, since a key may hold
    any character (a space, `#`, `%`, `?`, a control character) and pyarrow decodes the URL
    back to the key; the options of the listed URL (`?region=…`) carried over."""
    return f"{scheme}://{quote(path, safe='/')}" + (f"?{query}" if query else "")


def _list_objects(url: str) -> list[str]:
    try:
        fs, path = _filesystem(url)
    except pa.ArrowInvalid as exc:
        raise ingest_files.InputError(
            f"{url}: not a URL pyarrow can open ({exc}); write a space as %20, # as %23, % as %25"
        ) from None
    scheme = url.split("://", 1)[0]
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        raise ingest_files.InputError(f"{url}: no such file or directory")
    if info.type == pafs.FileType.File:
        return [url]
    selector = pafs.FileSelector(path, recursive=True)
    query = urlsplit(url).query
    found = [
        object_url(scheme, i.path, query)
        for i in fs.get_file_info(selector)
        if i.type == pafs.FileType.File and not any(p.startswith(".") for p in i.path.split("/"))
    ]
    return sorted(found)


def _size(name: str) -> int:
    if is_url(name):
        fs, path = _filesystem(name)
        return fs.get_file_info(path).size or 0
    try:
        return os.stat(name).st_size
    except OSError:
        return 0


def plan(names: list[str], shards: int) -> list[Shard]:
    """Contiguous ranges of the file list, of about equal bytes."""
    if not names:
        return []
    sizes = [max(_size(n), 1) for n in names]
    target = sum(sizes) / max(1, min(shards, len(names)))
    out: list[Shard] = []
    current: list[str] = []
    filled = 0
    for name, size in zip(names, sizes, strict=True):
        if current and filled + size / 2 > target * (len(out) + 1):
            out.append(Shard(len(out), current))
            current = []
        current.append(name)
        filled += size
    out.append(Shard(len(out), current))
    return out


def _conflicts(done: list[ShardDone]) -> tuple[int, int] | None:
    """The first range of shards (positions in done) that must be read together, or None."""
    seen: dict[str, int] = {}
    for at, d in enumerate(done):
        for run in d.runs:
            if run in seen and seen[run] != at:
                return seen[run], at
            seen[run] = at
    for at, d in enumerate(done):
        for folder in d.sidecar_dirs:
            for other_at, other in enumerate(done):
                if other_at != at and any(
                    x == folder or x.startswith(folder.rstrip("/") + "/") for x in other.dirs
                ):
                    return min(at, other_at), max(at, other_at)
    return _fusion_conflict(done)


def _fusion_conflict(done: list[ShardDone]) -> tuple[int, int] | None:
    """Shards holding the same episode (a console log in one, its results file or capture in
    another): one process would have fused them (ingest.fusion), so they are read together."""
    signed = [(at, d.fusion) for at, d in enumerate(done) if d.fusion and d.fusion[1].height]
    if len(signed) < 2:
        return None
    shard_of = {t: at for at, (_, trajs) in signed for t in trajs["trajectory_id"].to_list()}
    fps = pl.concat([fps for _, (fps, _) in signed])
    trajs = pl.concat([trajs for _, (_, trajs) in signed])
    for members in fusion.groups(fps, trajs).values():
        indexes = {shard_of[t] for t in members}
        if len(indexes) > 1:
            return min(indexes), max(indexes)
    return None


Runner = Callable[[list[Shard], str, Sequence[str], Settings | None], list[ShardDone]]


def processes(workers: int) -> Runner:
    """Shards on local processes (spawned: the parent's polars and DuckDB threads do not
    survive a fork)."""

    def run(
        shards: list[Shard], out: str, rules_dirs: Sequence[str], settings: Settings | None
    ) -> list[ShardDone]:
        if workers <= 1 or len(shards) <= 1:
            return [run_shard(s, out, rules_dirs, settings) for s in shards]
        with ProcessPoolExecutor(min(workers, len(shards)), mp_context=get_context("spawn")) as ex:
            futures = [ex.submit(run_shard, s, out, rules_dirs, settings) for s in shards]
            return [f.result() for f in futures]

    return run


def ray_runner(address: str | None = None) -> Runner:
    """Shards as Ray tasks, on the cluster at `address` ("auto": the one this machine belongs
    to; None: a local instance started for this scan)."""
    import ray

    def run(
        shards: list[Shard], out: str, rules_dirs: Sequence[str], settings: Settings | None
    ) -> list[ShardDone]:
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        task = ray.remote(run_shard)
        return list(ray.get([task.remote(s, out, rules_dirs, settings) for s in shards]))

    return run


def scan(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    runner: Runner,
    shards: int,
    shard_dir: str | None = None,
    rules_dirs: Sequence[str | os.PathLike[str]] | None = None,
    settings: Settings | None = None,
    exclude: Sequence[str | os.PathLike[str]] | None = None,
) -> pipeline.Scan:
    """pipeline.scan, spread: the same result, computed shard by shard by `runner`.

    The driver runs pipeline.expand over the local paths (object-store URLs are listed), then
    pipeline.read over the entries the walk could not read; the shards read and check their
    files; the driver merges their tables and runs pipeline.diagnose.
    """
    settings = settings or Settings()
    rules = pipeline.load_rules(rules_dirs, settings)
    names = pipeline.names(paths)
    objects = [o for url in names if is_url(url) for o in _list_objects(url)]
    local = [n for n in names if not is_url(n)]
    expansion = pipeline.expand(local, settings, exclude, others=objects)
    # What one process reads before the first file: unreadable entries, and the skipped list.
    front = pipeline.read(
        ingest_files.Expansion(skipped=expansion.skipped, rejected=expansion.rejected), settings
    )
    rule_dirs = [os.fspath(d) for d in rules_dirs or []]
    work = plan([str(p) for p in expansion.files] + objects, shards)
    keep = shard_dir is not None
    out = shard_dir or tempfile.mkdtemp(prefix="forensics-shards-")
    try:
        done = sorted(runner(work, out, rule_dirs, settings), key=lambda d: d.index)
        # Positions in `work` and `done`, not shard indexes: a merged shard keeps the index
        # (file names) of its first part, so the shards' files still sort in scan order.
        while (clash := _conflicts(done)) is not None:
            first, last = clash
            merged = Shard(work[first].index, [f for s in work[first : last + 1] for f in s.files])
            _remove_shards(out, [s.index for s in work[first : last + 1]])
            work = [*work[:first], merged, *work[last + 1 :]]
            (again,) = runner([merged], out, rule_dirs, settings)
            done = [*done[:first], again, *done[last + 1 :]]
        return pipeline.diagnose(_merge(done, out, front), rules)
    finally:
        if not keep:
            shutil.rmtree(out, ignore_errors=True)


def _remove_shards(out: str, indexes: Sequence[int]) -> None:
    fs, base = _filesystem(out)
    wanted = {f"shard-{i:05d}-" for i in indexes}
    for table in TABLES:
        root = f"{base.rstrip('/')}/{table}"
        if fs.get_file_info(root).type == pafs.FileType.NotFound:
            continue
        for info in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
            if info.type == pafs.FileType.File and info.base_name[:12] in wanted:
                fs.delete_file(info.path)


def _read(out: str, table: str) -> pa.Table | None:
    """One table of every shard, in scan order (DuckDB over the Parquet files)."""
    fs, base = _filesystem(out)
    root = f"{base.rstrip('/')}/{table}"
    if fs.get_file_info(root).type == pafs.FileType.NotFound:  # no shard: nothing to read
        return None
    files = [
        i
        for i in fs.get_file_info(pafs.FileSelector(root, recursive=True))
        if i.type == pafs.FileType.File and i.base_name.endswith(".parquet")
    ]
    parts = []
    for info in files:
        shard = int(info.base_name.split("-")[1])
        data = ds.dataset(info.path, filesystem=fs, format="parquet").to_table()
        parts.append(data.append_column("_shard", pa.array([shard] * data.num_rows, pa.int64())))
    if not parts:
        return None
    con = duckdb.connect()
    try:
        con.register("parts", pa.concat_tables(parts, promote_options="permissive"))
        return con.sql(
            f"select * exclude (_shard, {_ORDER}) from parts order by _shard, {_ORDER}"
        ).to_arrow_table()
    finally:
        con.close()


def _frame(table: pa.Table | None, like: pl.DataFrame) -> pl.DataFrame:
    if table is None:
        return like.clear()
    return pipeline.frame(table).select(like.columns).cast(like.schema)


def _merge(done: list[ShardDone], out: str, front: ingest.Ingested) -> pipeline.Checked:
    """The shards' tables and file lists after what the driver read, in one-process order."""
    shapes = _shapes()
    tables = {t: _frame(_read(out, t), shapes[t]) for t in TABLES}
    reports = [*front.files, *(r for d in done for r in d.files)]
    reports.sort(key=lambda r: r.path)
    not_checked: dict[str, dict[str, list[str]]] = {}
    for d in done:
        not_checked.update(d.not_checked)
    return pipeline.Checked(
        turns=tables["turns"],
        trajectories=tables["trajectories"],
        # Numbered again over every shard: the same key in two shards is two occurrences.
        findings=fingerprint.assign(
            tables["findings"].sort(
                ["source_path", "source_line", "rule", "turn_index"], nulls_last=True
            )
        ),
        rejects=pl.concat([_frame(front.rejects, shapes["rejects"]), tables["rejects"]]),
        files=reports,
        skipped=front.skipped,
        not_checked=dict(sorted(not_checked.items())),
    )


def _shapes() -> dict[str, pl.DataFrame]:
    """Empty tables of every shape a merge produces, for dtypes and for scans with no rows."""
    return {
        "turns": enrich.enrich(pa.Table.from_pylist([], schema=schema.RAW_TURNS)),
        "trajectories": _empty(schema.TRAJECTORIES),
        "findings": _empty(schema.FINDINGS),
        "rejects": _empty(schema.REJECTS),
    }


def _empty(table_schema: pa.Schema) -> pl.DataFrame:
    return pipeline.frame(pa.Table.from_pylist([], schema=table_schema))
