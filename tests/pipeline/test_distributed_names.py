"""Issue 24 item 1: object keys with any character in them. The distributed scan lists a bucket
and names each object by a URL that pyarrow decodes back to the key: a key with a space, `#`, `%`
or a control character used to end the scan (the URL rebuilt unencoded could not be parsed, or
named another object). Tested on a fake bucket: a local folder behind pyarrow's own URI parsing,
no network."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from forensics import distributed

from conftest import DATA

KEYS = ["a b.jsonl", "c#d.jsonl", "e%41f.jsonl", "g\x01h.jsonl", "i?j=k.jsonl", "ü.jsonl"]


@pytest.fixture
def bucket(tmp_path, monkeypatch):
    """`s3://bucket/...` served from tmp_path/bucket: the path comes out of pyarrow's URI parser
    (the same one that reads s3:// URLs), so a URL that does not encode its key fails here as it
    does against S3."""
    root = tmp_path / "store"
    folder = root / "bucket" / "in"
    folder.mkdir(parents=True)
    for key in KEYS:
        shutil.copy(DATA / "capture" / "vllm_agent_loop.jsonl", folder / key)
    local = pafs.SubTreeFileSystem(str(root), pafs.LocalFileSystem())

    def filesystem(url: str) -> tuple[pafs.FileSystem, str]:
        if not url.startswith("s3://"):
            return pafs.LocalFileSystem(), str(Path(url).resolve())
        rest = url[len("s3://") :].split("?", 1)[0]
        _fs, path = pafs.FileSystem.from_uri(f"file://{root}/{rest}")
        return local, path[len(str(root)) + 1 :]

    monkeypatch.setattr(distributed, "_filesystem", filesystem)
    return folder


def test_keys_with_any_character_are_listed_read_and_named(bucket, tmp_path):
    urls = distributed._list_objects("s3://bucket/in?region=us-east-1")
    assert urls == sorted(urls) and len(urls) == len(KEYS)
    assert "s3://bucket/in/a%20b.jsonl?region=us-east-1" in urls
    result = distributed.scan(
        ["s3://bucket/in"],
        runner=distributed.processes(1),
        shards=2,
        shard_dir=str(tmp_path / "shards"),
    )
    one = len(list((DATA / "capture" / "vllm_agent_loop.jsonl").read_text().splitlines()))
    assert result.rejects.is_empty()
    assert result.turns["source_path"].unique().sort().to_list() == sorted(
        distributed.object_url("s3", f"bucket/in/{key}") for key in KEYS
    )
    assert len(result.files) == len(KEYS) and all(f.records == one for f in result.files)


@pytest.mark.parametrize(
    ("key", "local"),
    [
        ("bucket/in/a b.jsonl", "s3/bucket/in/a b.jsonl"),
        ("bucket/../../etc/passwd", "s3/bucket/%2E%2E/%2E%2E/etc/passwd"),
        ("bucket/./x//y", "s3/bucket/%2E/x/y"),
    ],
)
def test_a_key_never_writes_outside_the_shards_folder(tmp_path, key, local):
    assert distributed._local(tmp_path, "s3", key) == tmp_path / local
