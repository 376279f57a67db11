"""Sweep grids: a small spec (ops × dtypes × archs × strategies × rows × cols) expanded into a request frame."""
from __future__ import annotations

import math
import re
from typing import Any

from .errors import PtoCostError

_RANGE = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*(?::\s*(\d+))?\s*$")
SPEC_KEYS = ("ops", "dtypes", "archs", "strategies", "rows", "cols", "valid_rows", "valid_cols", "dst_dtypes", "params")
SEQUENCE_PARAMS = ("gm_shape",)  # parameters whose one value is a list
MAX_POINTS = 20_000_000  # a grid's points (before `all` strategies multiply them): ~150 bytes of output each
# a row or column count: no tile of more elements fits a unified buffer (256 KiB at most, arch constants), and
# products of two counts and an element's bits stay well inside int64
MAX_COUNT = 2**24


def too_large(value: Any) -> str:
    """Return the message for a row or column count above MAX_COUNT (after the name of what holds it)."""
    return f"{value!r} is too large: counts are at most {MAX_COUNT} (2^24; no tile of more elements fits a unified buffer)"


def _count(n: int, what: str, value: Any) -> int:
    if n > MAX_COUNT:
        raise PtoCostError(f"{what} {too_large(value)}")
    return n


def parse_range(value: Any, what: str, limit: int = MAX_POINTS) -> list[int]:
    """Return the integers of `A:B:STEP` (inclusive of B when on the step), `A:B` (step 1), a number, or a list (also
    a comma-separated one); a range of more than `limit` values is refused."""
    if isinstance(value, (list, tuple)):
        out: list[int] = []
        for v in value:
            out.extend(parse_range(v, what, limit))
        return out
    if isinstance(value, dict):
        value = f"{value.get('start')}:{value.get('stop')}:{value.get('step', 1)}"
    if isinstance(value, bool):
        raise PtoCostError(f"malformed {what} {value!r}: expected N, A:B or A:B:STEP (e.g. 16:2048:16)")
    if isinstance(value, str) and "," in value:
        return parse_range([v for v in value.split(",") if v.strip()], what, limit)
    if isinstance(value, int) or str(value).strip().isdigit():
        if int(value) < 1:
            raise PtoCostError(f"malformed {what} {value!r}: need N >= 1 (or a range A:B:STEP with 1 <= A <= B)")
        return [_count(int(value), what, value)]
    text = str(value).strip()
    m = _RANGE.match(text)
    if not m:
        raise PtoCostError(f"malformed {what} {value!r}: expected N, A:B or A:B:STEP (e.g. 16:2048:16)")
    a, b, step = int(m.group(1)), _count(int(m.group(2)), what, value), int(m.group(3) or 1)
    if step < 1 or a < 1 or b < a:
        raise PtoCostError(f"malformed {what} {value!r}: need 1 <= A <= B and STEP >= 1")
    if (b - a) // step + 1 > limit:
        raise PtoCostError(f"{what} {value!r} has {(b - a) // step + 1:,} values; at most {limit:,} points are "
                           "evaluated at once")
    return list(range(a, b + 1, step))


def _list(value: Any, default: list, key: str) -> list:
    """The names a spec entry lists: a list, or a comma-separated string (`default` where it is absent)."""
    if value is None:
        return default
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)):
        raise PtoCostError(f"sweep spec: `{key}` is {value!r}; give a name, a comma-separated string or a list of "
                           f"names ({_SPEC_LISTS[key]})")
    return list(value)


_SPEC_LISTS = {"ops": "op, e.g. TADD", "dtypes": "element type, e.g. f16", "archs": "arch: a2a3 or a5",
               "strategies": "strategy: default, all or a name", "dst_dtypes": "destination type, e.g. f16",
               "rows": "count or range, e.g. 16:512:16", "cols": "count or range, e.g. 16:512:16"}


def _empty(value: Any) -> bool:
    """Whether a spec entry lists nothing (an empty list, or a blank or comma-only string)."""
    if isinstance(value, str):
        return not value.replace(",", "").strip()
    return isinstance(value, (list, tuple)) and not value


def _converts(op: str, archs: list[str]) -> bool:
    """Whether `op` takes a destination type on any of the arches (its catalogue entry lists src>dst pairs)."""
    from .catalog import instruction

    return any(">" in tok for arch in archs for tok in instruction(op).dtypes_on(arch))


def _strategies(names: list) -> list[str]:
    """Each strategy name once, in any letter case and without blanks (`default` and `all` in lower case); `all`
    covers the others."""
    seen: dict[str, str] = {}
    for name in (str(n).strip() for n in names):
        if name:
            key = name.lower()
            seen.setdefault(key, key if key in ("default", "all") else name)
    if not seen:
        raise PtoCostError("sweep spec: `strategies` is empty; give at least one strategy: default, all or a name")
    return ["all"] if "all" in seen else list(seen.values())


def expand(spec: dict[str, Any], *, limit: int = MAX_POINTS, name: str = "sweep",
           hint: str = "a coarser STEP, or several specs"):
    """Return a pandas DataFrame with one row per grid point of the spec (columns op, dtype, arch, strategy, rows, cols, ...).

    A grid of more than `limit` points is refused, naming it the `name` grid and suggesting `hint`."""
    import pandas as pd

    unknown = set(spec) - set(SPEC_KEYS) - {"model", "name"}
    if unknown:
        raise PtoCostError(f"unknown sweep spec key(s) {', '.join(sorted(unknown))}; accepted: {', '.join(SPEC_KEYS)}, model")
    if "ops" not in spec or "rows" not in spec or "cols" not in spec:
        raise PtoCostError("a sweep spec needs at least `ops`, `rows` and `cols`")
    for key, what in _SPEC_LISTS.items():
        value = spec.get(key)
        if (key == "ops" and value is None) or _empty(value):
            raise PtoCostError(f"sweep spec: `{key}` is empty; give at least one {what}")
    ops = _list(spec.get("ops"), [], "ops")
    dtypes = _list(spec.get("dtypes"), ["f16"], "dtypes")
    archs = _list(spec.get("archs"), ["a2a3"], "archs")
    strategies = _strategies(_list(spec.get("strategies"), ["default"], "strategies"))
    dst = _list(spec.get("dst_dtypes"), [""], "dst_dtypes")
    rows = parse_range(spec["rows"], "rows", limit)
    cols = parse_range(spec["cols"], "cols", limit)
    _check_names(ops, dtypes + [d for d in dst if d], archs)
    ops, dtypes, dst, archs = _distinct(ops, dtypes, dst, archs)
    valid = {key: _valid_counts(spec.get(key), key, limit) for key in ("valid_rows", "valid_cols")}
    fixed, swept = _params(spec.get("params"))
    # destination types vary the ops that convert (their catalogue lists src>dst pairs); the others take none
    combos = [(op, dt, d, arch, st) for op in ops for dt in dtypes
              for d in (dst if _converts(op, archs) else [""]) for arch in archs for st in strategies]
    n = (len(combos) * len(rows) * len(cols) * math.prod(len(v) for v in valid.values())
         * math.prod(len(v) for v in swept.values()))
    if n > limit:
        raise PtoCostError(f"the {name} grid has {n:,} points; at most {limit:,} are evaluated at once ({hint})")
    base = pd.DataFrame(combos, columns=["op", "dtype", "dst_dtype", "arch", "strategy"])
    shapes = pd.MultiIndex.from_product([rows, cols], names=["rows", "cols"]).to_frame(index=False)
    frame = base.merge(shapes, how="cross")
    for key, col in (("valid_rows", "rows"), ("valid_cols", "cols")):
        # a count larger than a point's tile is that point's error (valid region larger than the tile)
        counts = pd.DataFrame({key: pd.array(valid[key], dtype="Int64")})
        frame = frame.merge(counts, how="cross")
        frame[key] = frame[key].fillna(frame[col]).astype("int64")
    for k, v in fixed.items():
        frame[k] = [v] * len(frame)
    for k, values in swept.items():
        frame = frame.merge(pd.DataFrame({k: values}), how="cross")
    return frame


def _params(params: Any) -> tuple[dict[str, Any], dict[str, list]]:
    """Split a spec's `params` into (one value for every point, a list of values each point is repeated for). A GM
    shape is one value made of five numbers (a list of them, or of 1x1x1x64x128 strings, is swept) and is kept as
    its AxBxC text, a cell a CSV or Parquet file holds as it is. Names must be parameters a sweep reads."""
    from .operands_move import parse_gm_shape
    from .sweep import OP_PARAMS

    if params is None:
        return {}, {}
    if not isinstance(params, dict):
        raise PtoCostError(f"sweep spec `params` must map parameter names to a value or a list of values, got {params!r}")
    if "dst_dtype" in params:
        raise PtoCostError("sweep spec params: dst_dtype is not an op parameter; list conversion targets under the "
                           "top-level `dst_dtypes`")
    unknown = [k for k in params if k not in OP_PARAMS]
    if unknown:
        hint = [k for k in unknown if k.replace("-", "_") in OP_PARAMS]
        raise PtoCostError(f"sweep spec params: unknown parameter(s) {', '.join(unknown)}"
                           + (f" (names use underscores: {', '.join(k.replace('-', '_') for k in hint)})" if hint
                              else f"; accepted: {', '.join(OP_PARAMS)}"))
    fixed, swept = {}, {}
    for k, v in params.items():
        if k in SEQUENCE_PARAMS:
            many = isinstance(v, (list, tuple)) and all(isinstance(x, (list, tuple, str)) for x in v)
            values = [v] if not many else list(v)
            v = ["x".join(map(str, parse_gm_shape(x))) for x in values]
            v = v if many else v[0]
        if isinstance(v, dict) or (isinstance(v, (list, tuple)) and any(isinstance(x, (list, tuple, dict)) for x in v)):
            raise PtoCostError(f"sweep spec params: {k} is {v!r}; give a value or a list of values (a grid "
                               "dimension)")
        if isinstance(v, (list, tuple)):
            if not v:
                raise PtoCostError(f"sweep spec params: {k} has an empty list of values")
            swept[k] = list(v)
        else:
            fixed[k] = v
    return fixed, swept


def _valid_counts(value: Any, what: str, limit: int) -> list[int | None]:
    """The valid row or column counts a spec sweeps: one (a count, or `full` / absent: the whole tile, None), or a
    list or range of them, a grid dimension."""
    if isinstance(value, (list, tuple)):
        if not value:
            raise PtoCostError(f"sweep spec: `{what}` is empty; give a count, a range or `full`")
        return list(dict.fromkeys(c for v in value for c in _valid_counts(v, what, limit)))
    if isinstance(value, str) and (":" in value or "," in value):
        return list(parse_range(value, what, limit))
    return [_valid_count(value, what)]


def _valid_count(value: Any, what: str) -> int | None:
    """A fixed valid row or column count of every point, or None for the whole tile (`full` or absent)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "full"):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return _count(value, what, value)
    text = str(value).strip()
    if text.isdigit() and int(text) >= 1:
        return _count(int(text), what, value)
    raise PtoCostError(f"malformed {what} {value!r}: expected a count >= 1, `full` (the whole tile), or a list or "
                       "range A:B:STEP of them")


def _distinct(ops: list, dtypes: list, dst: list, archs: list) -> tuple[list, list, list, list]:
    """Return the lists without second spellings of one name (f16 and half, TADD and tadd): each point once, under
    its canonical name (TADD, f16, a5), as every result names it."""
    from .arch import check_arch
    from .catalog import instruction
    from .dtypes import dtype

    def first(names: list, canon) -> list:
        seen: dict = {}
        for n in names:
            name = canon(n) if n else ""
            seen.setdefault(name, name)
        return list(seen.values())

    return (first(ops, lambda n: instruction(n).name), first(dtypes, lambda n: dtype(n).name),
            first(dst, lambda n: dtype(n).name), list(dict.fromkeys(map(check_arch, archs))))


def _check_names(ops: list, dtypes: list, archs: list) -> None:
    """Raise on a name no point could be evaluated with: an unknown op, dtype or arch."""
    from .arch import check_arch
    from .catalog import instruction
    from .dtypes import dtype

    for op in ops:
        instruction(op)
    for d in dtypes:
        dtype(d)
    for a in archs:
        check_arch(a)
