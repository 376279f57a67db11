"""Where an estimate's parameters come from: the table file, its content digest, and the fit that wrote the rows."""
from __future__ import annotations

import functools
import hashlib
import os
from typing import Any


def digest(path: str) -> str:
    """Return the first 12 hex digits of the file's SHA-256 (a table edited in place gets a new one), or '' if the
    file cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return ""
    return _digest(str(path), st.st_mtime_ns, st.st_size)


@functools.cache
def _digest(path: str, mtime_ns: int, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:12]


def table(path: str, **about: Any) -> dict[str, Any]:
    """Return the provenance of parameters read from `path`: the file, its digest, and `about` (the rows used, the
    fit that wrote them, its n and cross-validated error), leaving out what is unknown (a table built in memory has
    no file)."""
    where = {"table": str(path), "sha256": digest(path)} if path else {}
    return {**where, **{k: v for k, v in about.items() if v not in (None, "")}}
