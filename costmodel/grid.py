"""Sweep grids: a small spec (ops × dtypes × archs × strategies × rows × cols) expanded into a request frame."""
from __future__ import annotations

import itertools
import re
from typing import Any

from .errors import PtoCostError

_RANGE = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*(?::\s*(\d+))?\s*$")
SPEC_KEYS = ("ops", "dtypes", "archs", "strategies", "rows", "cols", "valid_rows", "valid_cols", "dst_dtypes", "params")


def parse_range(value: Any, what: str) -> list[int]:
    """Return the integers of `A:B:STEP` (inclusive of B when on the step), `A:B` (step 1), a number, or a list."""
    if isinstance(value, (list, tuple)):
        out: list[int] = []
        for v in value:
            out.extend(parse_range(v, what))
        return out
    if isinstance(value, dict):
        value = f"{value.get('start')}:{value.get('stop')}:{value.get('step', 1)}"
    if isinstance(value, int):
        return [value]
    text = str(value).strip()
    if text.isdigit():
        return [int(text)]
    m = _RANGE.match(text)
    if not m:
        raise PtoCostError(f"malformed {what} {value!r}: expected N, A:B or A:B:STEP (e.g. 16:2048:16)")
    a, b, step = int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)
    if step < 1 or a < 1 or b < a:
        raise PtoCostError(f"malformed {what} {value!r}: need 1 <= A <= B and STEP >= 1")
    return list(range(a, b + 1, step))


def _list(value: Any, default: list) -> list:
    if value is None:
        return default
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value)


def expand(spec: dict[str, Any]):
    """Return a pandas DataFrame with one row per grid point of the spec (columns op, dtype, arch, strategy, rows, cols, ...)."""
    import pandas as pd

    unknown = set(spec) - set(SPEC_KEYS) - {"model", "name"}
    if unknown:
        raise PtoCostError(f"unknown sweep spec key(s) {', '.join(sorted(unknown))}; accepted: {', '.join(SPEC_KEYS)}, model")
    if "ops" not in spec or "rows" not in spec or "cols" not in spec:
        raise PtoCostError("a sweep spec needs at least `ops`, `rows` and `cols`")
    ops = _list(spec.get("ops"), [])
    dtypes = _list(spec.get("dtypes"), ["f16"])
    archs = _list(spec.get("archs"), ["a2a3"])
    strategies = _list(spec.get("strategies"), ["default"])
    dst = _list(spec.get("dst_dtypes"), [""])
    rows = parse_range(spec["rows"], "rows")
    cols = parse_range(spec["cols"], "cols")
    combos = list(itertools.product(ops, dtypes, dst, archs, strategies))
    base = pd.DataFrame(combos, columns=["op", "dtype", "dst_dtype", "arch", "strategy"])
    shapes = pd.MultiIndex.from_product([rows, cols], names=["rows", "cols"]).to_frame(index=False)
    frame = base.merge(shapes, how="cross")
    for key, col in (("valid_rows", "rows"), ("valid_cols", "cols")):
        v = spec.get(key)
        frame[key] = frame[col] if v in (None, "full") else frame[col].clip(upper=int(v))
    for k, v in (spec.get("params") or {}).items():
        frame[k] = v
    return frame
