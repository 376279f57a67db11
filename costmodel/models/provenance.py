"""Where an estimate's parameters come from: the table file, its content digest, and the fit that wrote the rows."""
from __future__ import annotations

import hashlib
from typing import Any

from .._data import per_file_version


def _digest(path: str) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return ""
    return h.hexdigest()[:12]


# the first 12 hex digits of the file's SHA-256 (a table edited in place gets a new one), or '' if it cannot be read
digest = per_file_version(_digest)


def table(path: str, **about: Any) -> dict[str, Any]:
    """Return the provenance of parameters read from `path`: the file, its digest, and `about` (the rows used, the
    fit that wrote them, its n and cross-validated error), leaving out what is unknown (a table built in memory has
    no file)."""
    where = {"table": str(path), "sha256": digest(path)} if path else {}
    return {**where, **{k: v for k, v in about.items() if v not in (None, "")}}
