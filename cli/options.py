"""Options shared by the commands that take one instruction request (estimate, plan, verify, compare)."""

import functools
import inspect
from typing import Annotated, Any, Callable, Optional

import typer

from costmodel.dtypes import all_dtypes

REQ = "Request"
OPS = "Op parameters"

# name -> (annotation, default); order is the order shown in --help
REQUEST_OPTIONS: dict[str, tuple[Any, Any]] = {
    "shape": (Annotated[Optional[str], typer.Option("--shape", "-s", help="Static tile shape RxC, e.g. 64x64.", rich_help_panel=REQ)], None),
    "dtype": (Annotated[str, typer.Option("--dtype", "-t", help=f"Element type: {' '.join(d.name for d in all_dtypes())} (fp16, float32, int8, ... accepted).", rich_help_panel=REQ)], "f16"),
    "valid": (Annotated[Optional[str], typer.Option("--valid", help="Valid region RxC (default: the whole tile).", rich_help_panel=REQ)], None),
    "arch": (Annotated[Optional[str], typer.Option("--arch", "-a", help="Target: a2a3 or a5 (default: $PTO_COST_ARCH, else a2a3).", rich_help_panel=REQ)], None),
    "static_valid": (Annotated[bool, typer.Option("--static-valid", metavar="", help="Tiles declare a compile-time valid shape (default: dynamic, as the measured tests do).", rich_help_panel=REQ)], False),
    "dst_dtype": (Annotated[Optional[str], typer.Option("--dst-dtype", help="Destination element type (conversions).", rich_help_panel=REQ)], None),
    "scalar": (Annotated[Optional[str], typer.Option("--scalar", help="Scalar operand of tile-scalar ops, held in the tile's type as the instruction takes it (1.0001 is 1 in f16; default: a small value in the op's domain).", rich_help_panel=OPS)], None),
    "order": (Annotated[Optional[str], typer.Option("--order", help="TDIVS operand order: tile_scalar (src/s, default) or scalar_tile (s/src).", rich_help_panel=OPS)], None),
    "cmp_mode": (Annotated[Optional[str], typer.Option("--cmp-mode", help="TCMP/TCMPS compare mode: eq (default) ne lt le gt ge (A2/A3 i32: eq only).", rich_help_panel=OPS)], None),
    "src0_valid": (Annotated[Optional[str], typer.Option("--src0-valid", help="TPART*: valid region of src0 (default: dst's).", rich_help_panel=OPS)], None),
    "src1_valid": (Annotated[Optional[str], typer.Option("--src1-valid", help="TPART*: valid region of src1 (default: dst's).", rich_help_panel=OPS)], None),
    "expand_mode": (Annotated[Optional[int], typer.Option("--expand-mode", help="TROWEXPAND*: 1 = col-major Rx1 scalars, 2 = row-major one 32-byte block per row.", rich_help_panel=OPS)], None),
    "expanded": (Annotated[Optional[str], typer.Option("--expanded", help="TROWEXPAND<op>: which source is the per-row operand, src0 or src1 (default src1).", rich_help_panel=OPS)], None),
    "idx_dtype": (Annotated[Optional[str], typer.Option("--idx-dtype", help="Index type: TPARTARGMAX/MIN i16, u16, i32 (default) or u32 (A2/A3 pairs f32 values with 32-bit indices only); TGATHER i32 or u32.", rich_help_panel=OPS)], None),
    "repeat": (Annotated[Optional[int], typer.Option("--repeat", help="BlockReduce*: repeat count 1..255 (default: the whole src tile).", rich_help_panel=OPS)], None),
    "mask": (Annotated[Optional[str], typer.Option("--mask", help="BlockReduce*: N (first N lanes) or HI:LO bit mask (default: all lanes).", rich_help_panel=OPS)], None),
    "dst_rep_stride": (Annotated[Optional[int], typer.Option("--dst-rep-stride", help="BlockReduce*: dst repeat stride in repeat outputs (default 1).", rich_help_panel=OPS)], None),
    "src_blk_stride": (Annotated[Optional[int], typer.Option("--src-blk-stride", help="BlockReduce*: src block stride in 32-byte blocks (default 1).", rich_help_panel=OPS)], None),
    "src_rep_stride": (Annotated[Optional[int], typer.Option("--src-rep-stride", help="BlockReduce*: src repeat stride in 32-byte blocks (default 8).", rich_help_panel=OPS)], None),
    "round_mode": (Annotated[Optional[str], typer.Option("--round-mode", help="TCVT round mode: none rint round floor ceil trunc odd (r/a/f/c/z/o and CAST_* accepted; default none: rint for float targets, trunc for float -> integer).", rich_help_panel=OPS)], None),
    "saturation": (Annotated[Optional[str], typer.Option("--saturation", help="TCVT saturation: on (clamp) or off (keep the low bits); default per conversion pair.", rich_help_panel=OPS)], None),
    "binary": (Annotated[Optional[bool], typer.Option("--binary/--linear", metavar="", help="TCOLSUM on A2/A3: pairwise tree through tmp (isBinary) or the linear chain (default); A5 lowers the linear chain only.", rich_help_panel=OPS)], None),
    "dst_layout": (Annotated[Optional[str], typer.Option("--dst-layout", help="Row reductions: dn (Rx1 col-major; the default where the rows fill whole 32-byte blocks) or nd; TMOV: nd (default) dn nz zn zz.", rich_help_panel=OPS)], None),
    "src_layout": (Annotated[Optional[str], typer.Option("--src-layout", help="TMOV source layout: nd dn nz zn zz (default nd).", rich_help_panel=OPS)], None),
    "gm_shape": (Annotated[Optional[str], typer.Option("--gm-shape", help="TLOAD/TSTORE: GM tensor shape0x..xshape4 (default 1x1x1xVRxVC).", rich_help_panel=OPS)], None),
    "pad": (Annotated[Optional[str], typer.Option("--pad", help="TLOAD pad value: null zero max min (default null).", rich_help_panel=OPS)], None),
    "in_place": (Annotated[bool, typer.Option("--in-place", metavar="", help="dst overwrites the first source (src, src0): A5 every elementwise op (not the reductions, whose dst has another shape); A2/A3 the elementwise ops whose sequence reads that source before writing dst.", rich_help_panel=OPS)], False),
    "vf_impl_kind": (Annotated[Optional[str], typer.Option("--vf-impl-kind", help="A5: requested VF loop form, by name or enum value: VFIMPL_DEFAULT (0), VFIMPL_1D_NO_POST_UPDATE (1), VFIMPL_2D_NO_POST_UPDATE (2), VFIMPL_1D_POST_UPDATE (3), VFIMPL_2D_POST_UPDATE (4); with the tile's contiguity it picks the emitted loop.", rich_help_panel=OPS)], None),
    "precision": (Annotated[Optional[str], typer.Option("--precision", help="Algorithm variant: default or high_precision (A5 TRECIP).", rich_help_panel=OPS)], None),
    "src_valid": (Annotated[Optional[str], typer.Option("--src-valid", help="Unary and binary_scalar ops (one source: TEXP, TADDS, ...): src valid region when it differs from dst's (A5 needs equal valid cols only).", rich_help_panel=OPS)], None),
}


def request_options(fn: Callable | None = None, *, exclude: tuple[str, ...] = ()) -> Callable:
    """Decorator: append the shared request options (but `exclude`) to a typer command; they arrive as `req: dict`."""
    if fn is None:
        return functools.partial(request_options, exclude=exclude)
    names = [n for n in REQUEST_OPTIONS if n not in exclude]
    sig = inspect.signature(fn)
    own = [p for p in sig.parameters.values() if p.name != "req"]
    extra = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=REQUEST_OPTIONS[name][1],
                               annotation=REQUEST_OPTIONS[name][0]) for name in names]

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        req = {name: kwargs.pop(name) for name in names if name in kwargs}
        return fn(*args, req=req, **kwargs)

    pos = [p for p in own if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    kw = [p for p in own if p not in pos]
    wrapper.__signature__ = sig.replace(parameters=pos + [p.replace(kind=p.KEYWORD_ONLY) for p in kw] + extra)
    return wrapper
