"""Which A5 loop forms are legal for a request, and which one the implementation emits (costmodel.md §7).

* Static contiguity (what the kernel decides at compile time): every tile has a static ValidCol == Cols, or
  Rows == 1 (costmodel.md §3 step 2). Families whose operands cannot be walked as one flat run (expand
  families, TPART with unequal source regions) are contiguous only for single-row tiles (inferred).
* A 1D form is legal when the data really is one contiguous run (runtime contiguity): valid cols == cols for
  every walked tile (or a single valid row); TSEL also needs mask rows of exactly dst.cols bits (inferred).
* The unary family has no 2D post-update form (costmodel.md §7: unary 2D always uses no-post-update).
* A column or row reduction has one form, 2D no-post-update (lower/a5/reduce.py).
* The requested `vf_impl_kind` plus static contiguity select the emitted form through data/a5_dispatch.csv.
"""
from __future__ import annotations

from ...arch import constants
from ...request import Request
from ...tiles import Tile
from .forms import STRATEGIES
from .reduce import REDUCE_FAMILIES, REDUCE_FORM
from .table import dispatch

ROW_SHAPED = ("col_expand", "col_expand_binary", "row_expand", "row_expand_binary")


def _static(t: Tile) -> bool:
    return (t.static_valid and t.valid_cols == t.cols) or t.rows == 1


def _partial_regions_differ(req: Request) -> bool:
    d = req.dst.valid
    return any(t.valid != d for n, t in req.sources if n in ("src0", "src1"))


def static_contiguous(req: Request) -> bool:
    """Whether the kernel sees every tile as one contiguous run at compile time (selects the 1D path)."""
    if req.family in ROW_SHAPED or (req.family == "partial" and _partial_regions_differ(req)):
        return req.dst.rows == 1
    return all(_static(t) for _, t in req.tiles)


def not_static_reason(req: Request) -> str:
    """Return why the request is not static-contiguous (`static_contiguous` False): the first tile that is not one
    run the kernel sees at compile time, and why."""
    if req.family in ROW_SHAPED or (req.family == "partial" and _partial_regions_differ(req)):
        return f"{req.family} operands are walked row by row unless dst has one row"
    for name, t in req.tiles:
        if not _static(t):
            return (f"{name}'s valid shape is dynamic" if not t.static_valid else
                    f"{name} ({t.rows}x{t.cols} {t.dtype}) holds {t.valid_cols} valid of {t.cols} columns a row")
    return ""


def one_d_reason(req: Request) -> str | None:
    """Return why a 1D loop cannot walk this request's data (None when it can)."""
    d = req.dst
    vr, vc = d.valid
    if vr <= 1:
        return None
    if req.family in ROW_SHAPED:
        return "a broadcast operand changes per row: 1D needs a single valid row"
    if req.family == "partial" and _partial_regions_differ(req):
        return "source valid regions differ: 1D needs a single valid row"
    for name, t in req.tiles:
        if name == "mask":
            if t.cols * 8 != d.cols:
                return f"mask rows hold {t.cols * 8} bits but dst rows {d.cols} elements: the bit stream is not contiguous"
        elif vc != t.cols:
            return f"{name} valid cols ({vc}) != cols ({t.cols}): the valid region is not contiguous"
    return None


def legal(req: Request) -> dict[str, str | None]:
    """Return {strategy: None if legal, else the reason it is not}."""
    why_1d = one_d_reason(req)
    out = {s: (why_1d if s.startswith("1d") else None) for s in STRATEGIES}
    if req.family == "unary":
        out["2d-post-update"] = "the unary implementation has no 2D post-update form (costmodel.md §7)"
    if req.family in REDUCE_FAMILIES:  # one loop form (lower/a5/reduce.py)
        walk = "each column chunk down the rows" if req.family == "col_reduce" else "each row's chunks into a register"
        why = f"a reduction folds {walk}: only {REDUCE_FORM} (inferred)"
        out = {s: (None if s == REDUCE_FORM else why) for s in STRATEGIES}
    return out


def resolve(req: Request) -> tuple[str, str]:
    """Return (strategy the implementation emits, explanation) for the request's vf_impl_kind."""
    kind = str(req.param("vf_impl_kind", "VFIMPL_DEFAULT"))
    cont = static_contiguous(req)
    form, source = dispatch(req.op, req.family, cont, kind)
    shape = "static-contiguous" if cont else f"not static-contiguous ({not_static_reason(req)})"
    why = f"{kind} on a {shape} request -> {form} [{source}]"
    if not cont and one_d_reason(req) is None and req.dst.valid[0] > 1:
        static_form = dispatch(req.op, req.family, True, kind)[0]
        why += (f"; the valid region is full-width but declared dynamic (costmodel.md §3 step 2): "
                f"with a static valid shape the kernel emits {static_form}")
    return form, why


def strategies(req: Request) -> tuple[str, dict[str, str | None]]:
    """Return (default strategy, {strategy: None or why illegal})."""
    return resolve(req)[0], legal(req)


SELECT_VARIANTS = ("TSel_b32_even", "TSel_b32_odd")  # a 32-bit TSEL in 1D by trip-count parity (§3 step 6)
# the ops that run TSEL's select programs: TSELS selects against a scalar through the same mask (inferred)
SELECTS = ("TSEL", "TSELS")


def select_variant(req: Request, strategy: str) -> str:
    """Return the program a 32-bit TSEL runs in 1D, which upstream keys by the parity of the 1D trip count
    (costmodel.md §3 steps 4 and 6: TSel_b32_even / TSel_b32_odd), or "" for every other request."""
    if req.op not in SELECTS or req.dtype.bits != 32 or not strategy.startswith("1d"):
        return ""
    per_vector = constants("a5").vl_bytes * 8 // req.dtype.bits  # elements per vector (costmodel.md §3 step 3)
    inner = -(-req.dst.valid_rows * req.dst.valid_cols // per_vector)
    return SELECT_VARIANTS[inner % 2]
