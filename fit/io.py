"""Atomic file output: write to a temporary file beside the target, then rename over it."""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the target's directory; on success it replaces `path`, on error it is removed."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp" + target.suffix, dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_frame(df, path: str | os.PathLike) -> None:
    """Write a DataFrame as CSV or Parquet (by extension), atomically."""
    target = Path(path)
    with atomic_path(target) as tmp:
        if target.suffix.lower() in (".parquet", ".pq"):
            try:
                df.to_parquet(tmp, index=False)
            except ImportError:
                from costmodel.errors import TraceError

                raise TraceError("writing Parquet needs pyarrow (pip install 'pto-cost[parquet]')") from None
        else:
            df.to_csv(tmp, index=False)


def save_figure(fig, path: str | os.PathLike) -> None:
    """Save a matplotlib figure (PNG/SVG/PDF by extension) atomically."""
    target = Path(path)
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format=target.suffix.lstrip(".").lower() or "png", dpi=150, bbox_inches="tight")
