"""A5 column and row reductions (lower/a5/reduce.py): emulated plans against the golden over random shapes, valid
regions (tails, column padding, empty regions) and every A5 dtype the catalogue lists; nothing outside dst's valid
region is written; a deliberately wrong fold is caught; legality, loop form and pricing."""
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import costmodel
from costmodel import lower
from costmodel.catalog import instruction
from costmodel.dtypes import dtype as as_dtype
from costmodel.emulate import a5 as emu
from costmodel.emulate.verify import make_inputs, verify
from costmodel.errors import NotModelledError, StrategyError, UnsupportedDtypeError
from costmodel.golden import golden
from costmodel.isa_a5 import Loop, VfProgram, Vlds, VOp
from costmodel.models.registry import model_for
from costmodel.operands import VF_IMPL_KINDS, make_request
from costmodel.sweep import sweep

COL_OPS = ("TCOLMAX", "TCOLMIN", "TCOLSUM", "TCOLPROD")
ROW_OPS = ("TROWMAX", "TROWMIN", "TROWSUM")  # TROWPROD: no in-register product reduction in the reference
SETTINGS = settings(max_examples=60, deadline=None)


def _a5_dtypes(op: str) -> tuple[str, ...]:
    return instruction(op).dtypes_on("a5")


def _inputs(plan, rng) -> dict[str, np.ndarray]:
    """Seeded inputs: the verifier's data for floats (goldens kept finite), the full range for integers (sums and
    products wrap, isa.md §4)."""
    out = make_inputs(plan, int(rng.integers(0, 2**16)))
    src = plan.request.tile("src")
    if src.dtype.is_integer:
        info = np.iinfo(src.dtype.np)
        out["src"] = rng.integers(info.min, info.max, size=src.shape, dtype=src.dtype.np, endpoint=True)
    return out


def _emulated(req, seed: int, **golden_kw):
    """Lower and emulate `req` on seeded inputs: (plan, dst buffer, UB before, UB after, dst as run, the golden)."""
    plan = lower.lower(req)
    inputs = _inputs(plan, np.random.default_rng(seed))
    before, after, _ = emu.run(plan, inputs, seed)
    dst = plan.buffer("dst")
    want = golden(req.op, inputs["src"], valid=req.tile("src").valid, out=before.tile(dst.offset, dst.tile), **golden_kw)
    return plan, dst, before, after, after.tile(dst.offset, dst.tile), want


def _only_changed(req, before, after, allowed: np.ndarray) -> None:
    """Assert that no byte of the unified buffer outside `allowed` changed."""
    changed = np.flatnonzero(before.bytes != after.bytes)
    assert allowed[changed].all(), (req.describe(), changed[~allowed[changed]][:8])


@st.composite
def col_requests(draw):
    op = draw(st.sampled_from(COL_OPS))
    dt = as_dtype(draw(st.sampled_from(_a5_dtypes(op))))
    epr = 2048 // max(dt.bits, 8)
    align = 256 // dt.bits  # a row-major row is whole 32-byte blocks (isa.md §1.1): padded columns
    cols = align * draw(st.integers(1, max(1, 3 * epr // align)))  # up to three chunks, so tails of every size
    rows = draw(st.integers(1, 12))
    vr = draw(st.integers(0, rows))
    vc = draw(st.integers(0, cols))
    static = draw(st.booleans()) and vr == rows and vc == cols
    return make_request(op, (rows, cols), dt.name, arch="a5", valid=(vr, vc), static_valid=static)


@SETTINGS
@given(req=col_requests(), seed=st.integers(0, 2**16))
def test_column_reductions_match_the_golden_and_write_only_the_dst_valid_region(req, seed):
    plan, dst, before, after, got, want = _emulated(req, seed)
    # the fold runs the rows in the CPU reference's order in the dst type, so even float sums agree bit for bit
    assert got.tobytes() == want.tobytes(), (req.describe(), got[0, :8], want[0, :8])
    # only dst[0, :vc] may change anywhere in the unified buffer (stores of inactive lanes issue no request)
    vc = req.dst.valid_cols
    esize = req.dtype.bits // 8
    allowed = np.zeros(after.bytes.size, dtype=bool)
    allowed[dst.offset:dst.offset + vc * esize] = True
    _only_changed(req, before, after, allowed)
    assert verify(plan, seed=seed % 4).ok


@pytest.mark.parametrize("op", COL_OPS)
def test_every_catalogue_dtype_is_lowered(op):
    """The A5 dtype list of the catalogue (isa.md §3) is exactly what the lowering takes; others are refused."""
    assert costmodel.modelled_dtypes(op, "a5") == _a5_dtypes(op)
    for dt in _a5_dtypes(op):
        assert verify(lower.lower(make_request(op, (9, 256), dt, arch="a5", valid=(7, 200))), seed=1).ok
    if "i8" not in _a5_dtypes(op):
        with pytest.raises(UnsupportedDtypeError):
            make_request(op, (4, 256), "i8", arch="a5")


def _mutate(plan, fn):
    """Return the plan with `fn` applied to every instruction of its VF programs (loops rebuilt around them)."""
    def walk(body):
        return tuple(replace(i, body=walk(i.body)) if isinstance(i, Loop) else fn(i) for i in body)
    progs = tuple(replace(p, body=walk(p.body)) if isinstance(p, VfProgram) else p for p in plan.body)
    return replace(plan, body=progs)


@pytest.mark.parametrize("mutation", ["reread_row0", "wrong_op", "skip_last_row"])
def test_a_wrong_fold_is_caught(mutation):
    """Mutation check: the verifier rejects a fold that re-reads row 0 instead of row 1, combines with the wrong op,
    or stops a row early."""
    plan = lower.lower(make_request("TCOLSUM", (16, 128), "f32", arch="a5", valid=(13, 100)))
    assert verify(plan, seed=0).ok

    def bad(ins):
        if mutation == "reread_row0" and isinstance(ins, Vlds) and ins.dst == "v1":
            return replace(ins, addr=replace(ins.addr, offset=replace(ins.addr.offset, const=0)))
        if mutation == "wrong_op" and isinstance(ins, VOp) and ins.op == "vadd":
            return replace(ins, op="vmax")
        return ins

    if mutation == "skip_last_row":
        def shorten(body):
            return tuple(replace(i, trip=i.trip - 1) if isinstance(i, Loop) and i.role == "rows"
                         else replace(i, body=shorten(i.body)) if isinstance(i, Loop) else i for i in body)
        wrong = replace(plan, body=tuple(replace(p, body=shorten(p.body)) for p in plan.body))
    else:
        wrong = _mutate(plan, bad)
    v = verify(wrong, seed=0)
    assert not v.ok and v.mismatches


def test_the_program_folds_rows_into_one_register_per_column_chunk():
    plan = lower.lower(make_request("TCOLMAX", (8, 320), "f16", arch="a5", valid=(5, 300)))
    (prog,) = plan.body
    (chunks,) = [i for i in prog.body if isinstance(i, Loop)]
    assert (chunks.role, chunks.trip, prog.epr) == ("chunks", 3, 128)  # ceil(300 / 128)
    (rows,) = [i for i in chunks.body if isinstance(i, Loop)]
    assert (rows.role, rows.trip) == ("rows", 4)  # rows 1..4 folded onto row 0
    assert [i.op for i in rows.body] == ["vlds", "vmax"]
    assert [i.op for i in chunks.body if not isinstance(i, Loop)] == ["plt_b16", "vlds", "vsts"]
    one_row = lower.lower(make_request("TCOLMAX", (1, 128), "f16", arch="a5"))
    assert not any(isinstance(i, Loop) for i in one_row.body[0].body[-1].body)  # a copy of row 0: no fold loop


def test_one_loop_form_whatever_vf_impl_kind():
    req = make_request("TCOLSUM", (8, 64), "f32", arch="a5")
    default, table = lower.strategies(req)
    assert default == "2d-no-post-update"
    assert [s for s, why in table.items() if why is None] == ["2d-no-post-update"]
    for kind in VF_IMPL_KINDS:
        assert lower.lower(make_request("TCOLSUM", (8, 64), "f32", arch="a5", vf_impl_kind=kind)).strategy == default
    with pytest.raises(StrategyError, match="folds each column chunk"):
        lower.lower(make_request("TCOLSUM", (8, 64), "f32", arch="a5", strategy="1d-post-update"))


def test_empty_region_returns_before_any_vf_and_binary_sum_is_refused():
    plan = lower.lower(make_request("TCOLMIN", (4, 64), "f32", arch="a5", valid=(0, 64)))
    assert plan.body == () and verify(plan, seed=0).ok
    empty = costmodel.estimate("TCOLMIN", "4x64", "f32", arch="a5", valid="4x0")
    assert empty.cycles == 0 and not any("anchor" in n for n in empty.notes)  # nothing to anchor: nothing is issued
    with pytest.raises(NotModelledError, match="isBinary"):
        lower.lower(make_request("TCOLSUM", (8, 64), "f32", arch="a5", binary=True))


def test_priced_by_the_anchored_pipeline_not_the_elementwise_formula():
    """No reduction was measured: the formula refuses, `auto` takes the pipeline anchored on the source tile, and the
    latency of the one-register fold grows with the rows."""
    plan = lower.lower(make_request("TCOLSUM", (64, 64), "f32", arch="a5"))
    with pytest.raises(NotModelledError, match="reduction"):
        model_for("a5", "formula").cost(plan)
    e = costmodel.estimate("TCOLSUM", "64x64", "f32", arch="a5")
    assert e.model == "anchored" and e.verified is True
    assert any("source tile" in n for n in e.notes)
    small = costmodel.estimate("TCOLSUM", "16x64", "f32", arch="a5").cycles
    assert small < e.cycles


def test_ops_lists_them_modelled_and_a_sweep_prices_them_per_request():
    cat = costmodel.catalog()
    rows = cat[cat["name"].isin(COL_OPS)]
    assert len(rows) == 4
    assert all(costmodel.lower.modelled("a5", "col_reduce", op) for op in COL_OPS)
    frame = pd.DataFrame({"op": ["TCOLSUM", "TCOLMAX"], "dtype": ["f32", "i8"], "rows": [16, 8], "cols": [64, 256],
                          "arch": ["a5", "a5"]})
    out = sweep(frame)
    assert out["cycles"].notna().all() and set(out["strategy"]) == {"2d-no-post-update"}


@st.composite
def row_requests(draw):
    op = draw(st.sampled_from(ROW_OPS))
    dt = as_dtype(draw(st.sampled_from(_a5_dtypes(op))))
    epr = 2048 // max(dt.bits, 8)
    align = 256 // dt.bits
    cols = align * draw(st.integers(1, max(1, 3 * epr // align)))
    rows = draw(st.integers(1, 12))
    vr, vc = draw(st.integers(1, rows)), draw(st.integers(1, cols))
    layout = "nd" if rows % align else draw(st.sampled_from(["dn", "nd"]))  # DN [R,1] needs 32-byte columns
    return make_request(op, (rows, cols), dt.name, arch="a5", valid=(vr, vc), dst_layout=layout)


@SETTINGS
@given(req=row_requests(), seed=st.integers(0, 2**16))
def test_row_reductions_match_the_golden_and_write_one_element_per_valid_row(req, seed):
    plan, dst, before, after, got, want = _emulated(req, seed, dst_cols=req.dst.cols)
    if req.op == "TROWSUM" and req.dtype.is_float:
        # lanes add in another order than the CPU's left-to-right float sum: isa.md §4.3 / §8 tolerance
        eps = {4: 1e-3, 2: 5e-3}[req.dtype.bits // 8]
        a, b = got.astype(np.float64), want.astype(np.float64)
        assert np.all((np.abs(a - b) <= eps) | (np.abs(a - b) <= eps * np.abs(b))), (req.describe(), a[:4, 0], b[:4, 0])
    else:
        assert got.tobytes() == want.tobytes(), (req.describe(), got[:4, 0], want[:4, 0])
    vr, esize = req.dst.valid_rows, req.dtype.bits // 8
    allowed = np.zeros(after.bytes.size, dtype=bool)
    for r in range(vr):  # dst[r, 0] only
        at = dst.offset + r * req.dst.row_stride * esize
        allowed[at:at + esize] = True
    _only_changed(req, before, after, allowed)
    assert verify(plan, seed=seed % 4).ok


@pytest.mark.parametrize("op", ROW_OPS)
def test_every_catalogue_dtype_of_the_row_reductions_is_lowered(op):
    assert costmodel.modelled_dtypes(op, "a5") == _a5_dtypes(op)


def test_row_program_folds_chunks_then_reduces_the_register_once_per_row():
    plan = lower.lower(make_request("TROWSUM", (8, 200), "f32", arch="a5", valid=(6, 150)))
    (prog,) = plan.body
    (rows,) = [i for i in prog.body if isinstance(i, Loop)]
    assert (rows.role, rows.trip) == ("rows", 6)
    ops = [i.role if isinstance(i, Loop) else i.op for i in rows.body]
    # the elementwise 2D no-post-update nest: the counter reset per row, chunk 0 starting the accumulator, a chunk
    # loop over the other ceil(150/64) - 1 = 2 whose last (22 lanes) runs the same body, then the register reduced
    assert ops == ["smov", "plt_b32", "vlds", "vsel", "chunks", "vcadd", "vsts"]
    (chunks,) = [i for i in rows.body if isinstance(i, Loop)]
    assert chunks.trip == 2 and [i.op for i in chunks.body] == ["plt_b32", "vlds", "vsel", "vadd"]
    (store,) = [i for i in rows.body if getattr(i, "op", "") == "vsts"]
    assert store.pred == "p1"  # the one-lane predicate
    with pytest.raises(NotModelledError, match="product"):
        lower.lower(make_request("TROWPROD", (8, 64), "f32", arch="a5"))
    assert costmodel.modelled_dtypes("TROWPROD", "a5") == ()


def test_a_wrong_in_register_reduction_is_caught():
    plan = lower.lower(make_request("TROWMAX", (8, 128), "i16", arch="a5", valid=(8, 100)))
    assert verify(plan, seed=0).ok
    wrong = _mutate(plan, lambda i: replace(i, op="vcmin") if isinstance(i, VOp) and i.op == "vcmax" else i)
    assert not verify(wrong, seed=0).ok


@pytest.mark.parametrize("op", ["TCOLMAX", "TROWSUM"])
def test_a_large_source_is_still_anchored_and_cycles_grow_with_rows(op):
    # a 576-column f32 source of 57 rows (131 KB) leaves no room for a binary anchor's three tiles: the anchors take
    # the rows that fit and their correction is scaled to the source's rows, instead of vanishing past a size
    got = [costmodel.estimate(op, (r, 576), "f32", "a5", verify=False) for r in (40, 50, 56, 57, 60, 80)]
    assert all(e.model == "anchored" for e in got), [e.model for e in got]
    cycles = [e.cycles for e in got]
    assert all(b > a for a, b in zip(cycles, cycles[1:])), cycles
    import re

    assert any(re.search(r"on the first \d+ rows of the source tile .*scaled to its 80 valid rows", n) for n in got[-1].notes)


@pytest.mark.parametrize("cols", [576, 1280, 2048])
def test_a_large_sources_anchors_take_as_many_rows_as_three_tiles_of_it_fit(cols):
    """QA 54: the alignment was counted once per row, so a 1280-column f32 source's anchors took 16 rows where 17
    fit the unified buffer beside each other."""
    from costmodel.errors import PtoCostError
    from costmodel.models.a5_anchored import anchor_rows

    rows = anchor_rows(make_request("TROWSUM", (200, cols), "f32", arch="a5"))
    lower.lower(make_request("TADD", (rows, cols), "f32", arch="a5"))
    with pytest.raises(PtoCostError, match="unified buffer"):
        lower.lower(make_request("TADD", (rows + 1, cols), "f32", arch="a5"))


@pytest.mark.parametrize("op", ["TROWMAX", "TROWMIN"])
def test_a_nan_in_a_rows_first_element_survives_as_the_reference_scan_keeps_it(op):
    # isa.md §4.3: the scan starts from element 0 with strict compares, so a NaN there is the row's result, while a
    # NaN further on is passed over; an accumulator started from the identity lost the first kind
    req = make_request(op, (4, 200), "f32", arch="a5", valid=(4, 150), dst_layout="nd")
    plan = lower.lower(req)
    src = np.random.default_rng(0).uniform(-50, 50, size=(4, 200)).astype(np.float32)
    src[0, 0] = src[1, 0] = np.nan
    before, after, _ = emu.run(plan, {"src": src}, 0)
    dst = plan.buffer("dst")
    got = after.tile(dst.offset, dst.tile)[:, 0]
    want = golden(op, src, valid=(4, 150), dst_cols=req.dst.cols, out=before.tile(dst.offset, dst.tile))[:, 0]
    assert np.isnan(want[:2]).all() and np.isnan(got[:2]).all() and np.array_equal(got[2:], want[2:])
