"""Locate and read the CSV tables shipped in `data/` (installed as the package `pto_cost_data`)."""
from __future__ import annotations

import csv
import functools
import os
from importlib import resources
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")


@functools.cache
def data_path(name: str) -> Path:
    """Return the filesystem path of a shipped data file (the source tree's `data/` first, else the installed copy)."""
    local = Path(__file__).resolve().parent.parent / "data" / name
    if local.exists():
        return local
    try:
        path = Path(str(resources.files("pto_cost_data") / name))
        if path.exists():
            return path
    except ModuleNotFoundError:
        pass
    return local


@functools.cache
def read_rows(name: str) -> tuple[dict[str, str], ...]:
    """Return the rows of a shipped CSV table as dicts of strings, in file order."""
    with open(data_path(name), newline="", encoding="utf-8") as fh:
        return tuple(dict(row) for row in csv.DictReader(fh))


def per_file_version(read: Callable[[str], T]) -> Callable[[str], T]:
    """Return `read(path)` cached per version of the file (its path, inode, size, and modification and status-change
    times): a file changed in place is read again, also one copied over with its old timestamp kept (`cp -p` sets
    the modification time back, not the status-change time). A path that cannot be stat'ed is passed to `read`
    uncached, whose error or default says so."""
    cached = functools.lru_cache(maxsize=8)(lambda path, _version: read(path))

    @functools.wraps(read)
    def versioned(path: str) -> T:
        try:
            st = os.stat(path)
        except OSError:
            return read(path)
        return cached(str(path), (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))

    return versioned
