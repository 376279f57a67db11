"""Atomic file output: write to a temporary file beside the target, then rename over it."""
from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from costmodel.errors import PtoCostError

TABLE_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
COMMITTED: list[str] = []  # the files this process replaced, complete, in order (what an interrupted run still wrote)


HELD_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")  # what stops a run: Ctrl-C, `kill` or `timeout`, a closed terminal


@contextmanager
def _signals_held() -> Iterator[None]:
    """Run the block with HELD_SIGNALS held back: one arriving during it is delivered, to the handler it would have
    met, once the block is done (in the main thread; elsewhere the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    held = [getattr(signal, n) for n in HELD_SIGNALS if hasattr(signal, n)]
    previous = {s: signal.signal(s, lambda signum, frame: came.append(signum)) for s in held}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    for s in dict.fromkeys(came):
        signal.raise_signal(s)


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the target's directory (created if missing); on success it replaces `path` (with the
    target's mode, or a new file's: 0666 less the umask), on error it is removed. A path that cannot be written is a
    PtoCostError naming it."""
    with atomic_paths([path]) as (tmp,):
        yield tmp


@contextmanager
def atomic_paths(paths: list[str | os.PathLike]) -> Iterator[list[Path]]:
    """`atomic_path` for files written together: yield a temporary path per target; on success every target is
    replaced, or (a rename failing or interrupted part-way) none is: the targets already replaced get their old
    files back."""
    targets = [Path(os.path.realpath(check_writable(p))) for p in paths]  # a symlink's file is replaced, not the link
    tmps: list[Path] = []
    try:
        for path, target in zip(paths, targets):
            tmps.append(_temporary_beside(path, target))
        yield tmps
        with _signals_held():  # the renames, or putting the old files back, are never cut part-way
            _replace_all(tmps, targets)
            COMMITTED.extend(str(p) for p in paths)
    except BaseException:
        for tmp in tmps:
            tmp.unlink(missing_ok=True)
        raise


def _temporary_beside(path: str | os.PathLike, target: Path) -> Path:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp" + target.suffix, dir=target.parent)
    except OSError as exc:
        raise PtoCostError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    return Path(tmp)


def _replace_all(tmps: list[Path], targets: list[Path]) -> None:
    """Rename each temporary file over its target; if a rename fails or is interrupted, put back the targets already
    replaced (a target's temporary file is gone once its rename happened) and leave the others as they were. A
    failed rename is a PtoCostError naming the file; an old file that could not be put back is kept beside it and
    named too."""
    kept: list[tuple[Path, Path, Path | None]] = []  # (temporary, target, its old file kept aside, if several)
    try:
        for tmp, target in zip(tmps, targets):
            os.chmod(tmp, target.stat().st_mode & 0o777 if target.exists() else 0o666 & ~_umask())
            old = None
            if len(targets) > 1 and target.exists():
                old = tmp.with_name(tmp.name + ".old")
                try:
                    os.link(target, old)
                except OSError:  # a file system without hard links
                    try:
                        shutil.copy2(target, old)
                    except OSError as exc:
                        old.unlink(missing_ok=True)
                        raise PtoCostError(f"cannot keep {target} aside while writing it: {exc.strerror or exc}") from None
            kept.append((tmp, target, old))
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise PtoCostError(f"cannot write {target}: {exc.strerror or exc}") from None
    except BaseException:
        stranded = []
        for tmp, target, old in reversed(kept):
            if tmp.exists():  # never replaced
                continue
            try:
                if old is not None:
                    os.replace(old, target)
                else:
                    target.unlink(missing_ok=True)
            except OSError:
                stranded.append(f"{target} (its old contents are in {old})" if old else str(target))
                kept.remove((tmp, target, old))
        if stranded:
            raise PtoCostError(f"a write failed part-way and could not put back {', '.join(stranded)}") from None
        raise
    finally:
        for _, _, old in kept:
            if old is not None:
                old.unlink(missing_ok=True)


def _not_a_directory(path: str | os.PathLike) -> str | os.PathLike:
    if not str(path).strip():
        raise PtoCostError("output path is empty; give a file name")
    if Path(path).is_dir():
        raise PtoCostError(f"output path {path} is a directory; give a file name")
    return path


def check_writable(path: str | os.PathLike) -> str | os.PathLike:
    """Return `path` if a file can be written there atomically: not a directory or a device, in a directory that
    exists and is writable or can be created; PtoCostError naming the problem otherwise (checked before long work, so
    a fit does not run for a minute and then fail to write)."""
    target = Path(os.path.realpath(_not_a_directory(path)))  # a link is written where it points (atomic_paths)
    if target.exists() and not target.is_file():
        raise PtoCostError(f"output path {path} is not a regular file; give a file name")
    if target.exists() and not os.access(target, os.W_OK):  # replacing it would need only the directory writable
        raise PtoCostError(f"output file {path} is read-only; make it writable or give another path")
    parent = target.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise PtoCostError(f"cannot write {path}: {parent} is not a directory")
    try:  # a file made and removed: os.access says yes to root on a pseudo-filesystem (/proc) that takes none
        fd, probe = tempfile.mkstemp(dir=parent, prefix=".pto-cost-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError:
        raise PtoCostError(f"cannot write {path}: the directory {parent} is not writable") from None
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_table_path(path: str | os.PathLike) -> str:
    """Return the table format ('csv' or 'parquet') an output path's extension names; PtoCostError otherwise."""
    fmt = TABLE_FORMATS.get(Path(check_writable(path)).suffix.lower())
    if fmt is None:
        raise PtoCostError(f"output {path}: unknown table format {Path(path).suffix or '(no extension)'!r}; "
                           f"accepted: {', '.join(TABLE_FORMATS)}")
    return fmt


def check_figure_path(path: str | os.PathLike) -> str:
    """Return the figure format an output path's extension names (one matplotlib writes); PtoCostError otherwise."""
    from matplotlib.figure import Figure

    formats = Figure().canvas.get_supported_filetypes()
    fmt = Path(check_writable(path)).suffix.lstrip(".").lower()
    if fmt not in formats:
        common = [f for f in ("png", "svg", "pdf", "jpg", "eps") if f in formats]
        raise PtoCostError(f"figure {path}: unknown image format {fmt or '(no extension)'!r}; accepted: "
                           f"{', '.join(common)}, ... (any of the {len(formats)} formats matplotlib writes)")
    return fmt


def write_frame(df, path: str | os.PathLike, *, into: Path | None = None) -> None:
    """Write a DataFrame as CSV or Parquet (by extension), atomically. In Parquet, a text column whose filled cells
    are all numbers is written as numbers (blanks as missing): a checked CSV is read as text, and a typed file should
    not keep it so; a CSV keeps the text as it was. With `into`, write that temporary file of the caller's
    `atomic_paths` instead."""
    fmt = check_table_path(path)
    if into is None:
        with atomic_path(path) as tmp:
            return write_frame(df, path, into=tmp)
    if fmt == "parquet":
        try:
            _typed(df).to_parquet(into, index=False)
        except ImportError:
            raise PtoCostError("writing Parquet needs pyarrow (pip install 'pto-cost[parquet]')") from None
    else:
        df.to_csv(into, index=False)


def _typed(df):
    """Return the frame with each text column typed where that loses nothing: flags (a flag column's true/false,
    1/0, yes/no, on/off, and any column of True/False) as booleans, numbers whose text they reproduce (no '007', no
    '1.10', no integer beyond 64 bits) as numbers (whole numbers with gaps as nullable integers); every other
    column of mixed values as text. Blanks are missing. (True/False text is what pandas writes for booleans; other
    spellings are flags only in a flag column.)"""
    import pandas as pd

    from costmodel.flags import FLAG_PARAMS, flag

    out = df.copy()
    for col in out.columns:
        if isinstance(out[col].dtype, pd.CategoricalDtype) or not (
                pd.api.types.is_string_dtype(out[col]) or out[col].dtype == object):
            continue  # typed already (a categorical is stored as a Parquet dictionary)
        cells = out[col].astype(object)
        text = cells.where(cells.notna(), "").astype(str).str.strip()
        codes, uniques = pd.factorize(text)  # judge each distinct text once (a sweep repeats a few names)
        filled = [u for u in uniques if u != ""]
        if not filled:
            continue
        if col in FLAG_PARAMS or set(filled) <= {"True", "False"}:
            try:
                kind = {u: (flag(u, col) if u else None) for u in uniques}
                out[col] = pd.array([kind[u] for u in uniques], dtype="boolean").take(codes)
                continue
            except PtoCostError:
                pass
        elif all(map(_whole_number_text, filled)):
            out[col] = pd.array([int(u) if u else None for u in uniques], dtype="Int64").take(codes)
            continue
        elif all(map(_number_text_round_trips, filled)):
            out[col] = pd.to_numeric(text.where(text != ""))
            continue
        out[col] = text.where(text != "", None)
    return out


def _whole_number_text(text: str) -> bool:
    """Whether `text` is an int64 written as Python writes it (no '007', no '+5')."""
    try:
        return str(int(text)) == text and abs(int(text)) < 2 ** 63
    except ValueError:
        return False


def _number_text_round_trips(text: str) -> bool:
    """Whether `text` is a whole number or a float written back as the same text."""
    try:
        return _whole_number_text(text) or repr(float(text)) == text
    except ValueError:
        return False


def write_json(doc: dict, path: str | os.PathLike) -> None:
    """Write a JSON document atomically (no NaN: JSON has none)."""
    import json

    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(doc, allow_nan=False) + "\n")


def save_figure(fig, path: str | os.PathLike, *, into: Path | None = None) -> None:
    """Save a matplotlib figure (PNG/SVG/PDF/... by extension) atomically (`into`: as in `write_frame`)."""
    fmt = check_figure_path(path)
    if into is None:
        with atomic_path(path) as tmp:
            return save_figure(fig, path, into=tmp)
    fig.savefig(into, format=fmt, dpi=150, bbox_inches="tight")
