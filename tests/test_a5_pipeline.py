"""A5 pipeline model: hand-checked schedules, breakdown and bounds, extrapolation, vectorised path, views, fit."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel import api
from costmodel.isa_a5 import Addr, Affine, Loop, Plt, PostAddr, PtrAdd, VfProgram, Vlds, VOp, Vsts, walk
from costmodel.models.a5_pipeline import PipelineModel
from costmodel.models.a5_pipeline_engine import compile_program, simulate
from costmodel.models.a5_pipeline_uarch import PARAM_NAMES, A5Uarch, read_params, shipped, vector_class
from costmodel.models.a5_pipeline_views import critical_path

# Hand-check parameters: whole numbers, one instruction dispatched per cycle, no loop overheads.
HAND = A5Uarch(startup=20, drain=12, dispatch_width=1, window=64, loop_entry=0, iter_gap=0, outer_gap=0,
               load_latency=6, load_ii=1, store_latency=9, store_ii=1, ptr_latency=1, agu_ii=0,
               pred_latency=1, alu_latency=5, alu_ii=1, mul_latency=6)


def _prog(*body, form="1d-post-update"):
    return VfProgram(form, 64, tuple(body))


def _tadd_body():
    return (Plt("p0", "s_n", 32),
            Vlds("v0", PostAddr("a_src0", 64), "f32"),
            Vlds("v1", PostAddr("a_src1", 64), "f32"),
            VOp("vadd", "f32", "v2", ("v0", "v1"), "p0"),
            Vsts("v2", PostAddr("a_dst", 64), "f32", "NORM_B32", "p0"))


def _run(prog, ua=HAND, record=True):
    tpl = compile_program(prog)
    return simulate(tpl, tpl.trips, ua, record=record)


def test_one_iteration_tadd_by_hand():
    # plt dispatches at 20, the loads at 21 and 22 (width 1), so v1 is ready at 22 + 6 = 28; vadd issues at 28,
    # is done at 28 + 5 = 33; the store issues at 33 and is done at 33 + 9 = 42; the VF ends at 42 + 12 = 54.
    cycles, tr = _run(_prog(Loop("i", 1, _tadd_body(), "elements")))
    assert cycles == pytest.approx(20 + 2 + 6 + 5 + 9 + 12) == 54
    assert tr.issue == pytest.approx([20, 21, 22, 28, 33])
    assert tr.why_issue[3] == "operand" and tr.why_issue[4] == "operand"


def test_two_independent_ops_use_both_ports_and_a_third_waits_for_the_interval():
    ua = A5Uarch(**{**HAND.__dict__, "dispatch_width": 100.0, "alu_ii": 3.0})
    prog = _prog(VOp("vadd", "f32", "v2", ("v0", "v1")), VOp("vsub", "f32", "v3", ("v0", "v1")),
                 VOp("vmax", "f32", "v4", ("v0", "v1")))
    _, tr = _run(prog, ua)
    assert tr.issue[0] == pytest.approx(20.0) and tr.issue[1] == pytest.approx(20.01)
    assert {tr.port[0], tr.port[1]} == {"exu0", "exu1"}  # overlap on the two ports
    assert tr.issue[2] == pytest.approx(23.0)                 # port 0 free again after its II of 3
    assert tr.why_issue[2] == "exu"


def test_an_exu0_only_op_serialises_on_port_0():
    ua = A5Uarch(**{**HAND.__dict__, "dispatch_width": 100.0, "alu_ii": 2.0})
    prog = _prog(*(VOp("vdup", "f32", f"v{k}", (), None, "s0") for k in range(3)))
    _, tr = _run(prog, ua)
    assert tr.port == ["exu0"] * 3
    assert tr.issue == pytest.approx([20.0, 22.0, 24.0])


def test_sfu_interval_does_not_block_alu_ops_on_the_same_port():
    ua = A5Uarch(**{**HAND.__dict__, "dispatch_width": 100.0, "exu_ports": 1, "sfu32_ii": 4.0})
    prog = _prog(VOp("vexp", "f32", "v1", ("v0",)), VOp("vadd", "f32", "v2", ("v0", "v0")),
                 VOp("vexp", "f32", "v3", ("v0",)))
    _, tr = _run(prog, ua)
    assert tr.issue[1] == pytest.approx(20.01)  # ALU op next to the SFU op
    assert tr.issue[2] == pytest.approx(24.0)   # second SFU op after the SFU II


def test_loop_entry_and_iteration_gap_gate_dispatch():
    ua = A5Uarch(**{**HAND.__dict__, "dispatch_width": 100.0, "loop_entry": 5.0, "iter_gap": 2.0})
    prog = _prog(Loop("i", 3, (VOp("vadd", "f32", "v2", ("v0", "v1")),), "elements"))
    _, tr = _run(prog, ua)
    assert tr.dispatch == pytest.approx([25.0, 27.0, 29.0])
    assert tr.why_dispatch[0] == "loop_entry" and tr.why_dispatch[1] == "iter_gap"
    one = _prog(Loop("i", 1, (VOp("vadd", "f32", "v2", ("v0", "v1")),), "elements"))
    assert _run(one, ua)[1].dispatch == pytest.approx([20.0])  # a 1-trip loop is flattened: no entry bubble


def test_2d_explicit_addresses_share_one_address_unit():
    ua = A5Uarch(**{**HAND.__dict__, "dispatch_width": 100.0, "agu_ii": 2.0, "store_ii": 0.5, "load_ii": 0.5})
    addr = Addr("src", 32, Affine(0, (("r", 64), ("j", 64))))
    body = (Vlds("v0", addr, "f32"), Vlds("v1", addr, "f32"), Vlds("v2", Addr("src", 32, Affine(0, (("j", 64),))), "f32"))
    _, tr = _run(_prog(*body, form="2d-no-post-update"), ua)
    assert tr.issue == pytest.approx([20.0, 22.0, 20.02])  # two row-indexed addresses in order; the 1-term one is free


def test_address_unit_runs_ahead_of_dispatch_by_its_lead():
    ua = A5Uarch(**{**HAND.__dict__, "dispatch_width": 100.0, "agu_ii": 2.0, "agu_lead": 3.0, "store_ii": 0.5,
                    "load_ii": 0.5})
    addr = Addr("src", 32, Affine(0, (("r", 64), ("j", 64))))
    body = tuple(Vlds(f"v{k}", addr, "f32") for k in range(3))
    _, tr = _run(_prog(*body, form="2d-no-post-update"), ua)
    # addresses from 20 - 3 = 17 on, one per 2 cycles (17, 19, 21); an access still issues no earlier than it dispatches
    assert tr.issue == pytest.approx([20.0, 20.01, 21.0])


def test_window_stalls_dispatch():
    ua = A5Uarch(**{**HAND.__dict__, "dispatch_width": 100.0, "window": 1, "alu_latency": 10.0})
    chain = (VOp("vadd", "f32", "v1", ("v0", "v0")), VOp("vadd", "f32", "v2", ("v1", "v1")),
             VOp("vadd", "f32", "v3", ("v2", "v2")))
    _, tr = _run(_prog(*chain), ua)
    # window 1: an op dispatches only once every earlier op has issued; the second issues at 20 + 10 = 30
    assert tr.issue[:2] == pytest.approx([20.0, 30.0])
    assert tr.dispatch[2] == pytest.approx(30.0) and tr.why_dispatch[2] == "window"


def test_packing_store_serialisation_rules():
    ua = A5Uarch(**{**HAND.__dict__, "dispatch_width": 100.0, "pack_store_serial": 3.0, "pack_store_pu_gap": 50.0,
                    "pack_store_row_gap": 30.0})
    st_pu = Vsts("v0", PostAddr("a_dst", 16), "fp8_e4m3", "PK4_B32", "p0")
    cycles, tr = _run(_prog(Loop("j", 2, (st_pu,), "chunks")), ua)
    # a post-update loop of two chunks: each store completes 9 + gap 50 after it issues; the second waits for the
    # first to be done (20 + 59) + serial 3, and the VF ends after the last one's completion
    assert tr.issue[1] == pytest.approx(20 + 9 + 50 + 3)
    assert cycles == pytest.approx(tr.issue[1] + 9 + 50 + 12)
    assert critical_path(tr)["pack_store"] == pytest.approx(50 + 9 + 50 + 3)
    st_x = Vsts("v0", Addr("dst", 8, Affine(0, (("i", 64),))), "fp8_e4m3", "PK4_B32", "p0")
    _, tr = _run(_prog(Loop("i", 2, (st_x,), "elements")), ua)
    assert tr.issue[1] == pytest.approx(20 + 9 + 3)  # explicit addressing: only the serialisation
    # rows of two chunks: a row's first store waits row_gap more after the row before; rows of one chunk pay neither
    two = _prog(Loop("r", 2, (Loop("j", 2, (st_pu,), "chunks"),), "rows"), form="2d-post-update")
    _, tr = _run(two, ua)
    assert np.diff(tr.issue) == pytest.approx([59 + 3, 59 + 3 + 30, 59 + 3])
    one = _prog(Loop("r", 2, (Loop("j", 1, (st_pu,), "chunks"),), "rows"), form="2d-post-update")
    _, tr = _run(one, ua)
    assert tr.done[0] - tr.issue[0] == pytest.approx(9) and tr.issue[1] - tr.done[0] <= 3 + 1e-9
    # a row of only a tail chunk (its store sits in the row loop, no chunk loop) is a row of one chunk too
    tail_only = _prog(Loop("r", 2, (st_pu,), "rows"), form="2d-post-update")
    _, tr = _run(tail_only, ua)
    assert tr.done[0] - tr.issue[0] == pytest.approx(9) and tr.issue[1] - tr.done[0] <= 3 + 1e-9
    # a full chunk and a tail make a row of two chunks: the tail store pays the gap, but not the row's first-store wait
    full_tail = _prog(Loop("r", 2, (Loop("j", 1, (st_pu,), "chunks"), st_pu), "rows"), form="2d-post-update")
    _, tr = _run(full_tail, ua)
    assert tr.done[1] - tr.issue[1] == pytest.approx(9 + 50) and tr.done[0] - tr.issue[0] == pytest.approx(9 + 50)
    assert tr.issue[1] - tr.done[0] == pytest.approx(3)


def test_vector_classes():
    assert vector_class("vexp", "f16") == "sfu16" and vector_class("vdiv", "f32") == "sfu32"
    assert vector_class("vcvt", "f32", {"to": "fp8_e4m3"}) == "cvt_n4"
    assert vector_class("vcvt", "fp4_e2m1", {"to": "bf16"}) == "cvt_w4"
    assert vector_class("vcvt", "f16", {"to": "f32"}) == "cvt_w2"
    assert vector_class("vcvt", "bf16", {"to": "f16"}) == "cvt1"
    assert vector_class("vmuls", "f32") == "mul" and vector_class("vsel", "u32") == "alu"
    # costmodel.md §8: VCMAX/VCMIN latency 16, VCADD 22 (fp32)
    assert vector_class("vcmax", "f32") == vector_class("vcmin", "i64") == "reduce"
    assert vector_class("vcmax", "f16") == vector_class("vcmin", "i8") == "reduce16"
    assert vector_class("vcadd", "f32") == "reduce_sum" and vector_class("vcadd", "bf16") == "reduce_sum16"
    assert [shipped().vector(c)[0] for c in ("reduce", "reduce16", "reduce_sum", "reduce_sum16")] == [16, 17, 22, 24]


# --------------------------------------------------------------------------------------------------------
CASES = [("TADD", (10, 224), (10, 192), "f32", {}), ("TSUB", (10, 1312), (10, 1280), "f32", {}),
         ("TMINS", (20, 1312), (20, 1280), "f32", {"scalar": 1.0}),
         ("TEXP", (3, 1344), (3, 1280), "f16", {}), ("TCVT", (3, 448), (3, 384), "f32", {"dst_dtype": "fp8_e4m3"}),
         ("TCVT", (10, 1344), (10, 1280), "bf16", {"dst_dtype": "f16"}), ("TDIVS", (1, 1280), (1, 1280), "f32", {"scalar": 2.0}),
         ("TRECIP", (2, 160), (2, 128), "f32", {"precision": "high_precision"}), ("TSEL", (2, 640), (2, 512), "i8", {})]


@pytest.mark.parametrize("op,shape,valid,dt,kw", CASES)
def test_breakdown_sums_to_cycles_and_bounds_hold(op, shape, valid, dt, kw):
    p = api.plan(op, shape, dt, "a5", valid=valid, **kw)
    r = PipelineModel().simulate(p)
    assert math.isfinite(r.cycles) and r.cycles > 0
    assert sum(v for _, v in r.breakdown) == pytest.approx(r.cycles, abs=1e-6)
    assert min(v for _, v in r.breakdown) >= -1e-6  # a critical path only ever moves forward in time
    assert max(v for _, v in r.bounds) <= r.cycles + 1e-6
    assert set(r.bottleneck) <= {k for k, _ in r.bounds}
    assert PipelineModel().simulate(p).cycles == r.cycles  # deterministic


def test_address_bound_program_charges_its_address_unit():
    p = api.plan("TSUB", (10, 1312), "f32", "a5", valid=(10, 1280))
    terms = dict(PipelineModel().simulate(p).breakdown)
    assert max(terms, key=terms.get) == "agu" and terms["agu"] > 0.5 * sum(terms.values())


def test_critical_path_of_a_hand_schedule():
    _, tr = _run(_prog(Loop("i", 1, _tadd_body(), "elements")))
    cp = critical_path(tr)
    assert cp["startup"] == 20 and cp["drain"] == 12
    assert cp["frontend"] == pytest.approx(2)          # the second load's dispatch slot
    assert cp["latency"] == pytest.approx(6 + 5 + 9)   # load -> add -> store chain
    assert sum(cp.values()) == pytest.approx(54)


@pytest.mark.parametrize("op,dt,kw", [("TADD", "f32", {}), ("TMINS", "f32", {"scalar": 1.0}), ("TEXP", "f16", {}),
                                      ("TCVT", "f32", {"dst_dtype": "f16"}), ("TDIVS", "f32", {"scalar": 2.0})])
def test_extrapolation_equals_full_simulation(op, dt, kw):
    m = PipelineModel()
    epr = 64 if dt == "f32" else 128
    for rows, chunks in [(1, 70), (1, 97), (3, 60), (12, 9), (11, 55), (9, 3), (13, 1), (10, 2)]:
        cols = chunks * epr
        if rows * cols * 4 * 3 > 250_000:
            continue
        p = api.plan(op, (rows, cols), dt, "a5", **kw)
        tpl = m.template(p.body[0])
        full = simulate(tpl, tpl.trips, m.ua)[0]
        assert m.program_cycles(tpl) == pytest.approx(full, abs=0.25), (rows, chunks)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 300))
def test_monotone_in_trip_count(n):
    m = PipelineModel()
    p = api.plan("TADD", (1, 640), "f32", "a5")
    c = m.cycles_for(p.body[0], inner=np.array([n, n + 1, n + 7]))
    assert c[0] <= c[1] + 1e-6 <= c[2] + 2e-6


@pytest.mark.parametrize("op, dtype, epr, step", [("TFMOD", "i32", 64, 8), ("TADD", "f16", 128, 16),
                                                 ("TMINS", "f32", 64, 8)])
def test_2d_post_update_rows_of_whole_chunks_pay_the_row_end_adjustment(op, dtype, epr, step):
    # costmodel.md §7: a 2D post-update row ends with the pointer adjustment whether or not vc fills whole chunks,
    # so a row of exactly one chunk is not cheaper than a row of a tail alone beyond the tail predicate's set-up
    # (it cost 165 cycles against 212 for TFMOD i32 32x64 / 32x56 when the zero adjustment was dropped)
    def cycles(cols):
        return api.estimate(op, (32, cols), dtype, "a5", strategy="2d-post-update", model="pipeline").cycles

    below, whole, above = cycles(epr - step), cycles(epr), cycles(epr + step)
    assert whole >= below - 1.0
    assert above > whole
    prog = api.plan(op, (32, epr), dtype, "a5", strategy="2d-post-update").body[0]
    adds = [ins for ins, _, _ in walk(prog.body) if isinstance(ins, PtrAdd)]
    assert len(adds) == 3 - (op == "TMINS") and all(a.delta == 0 for a in adds)


def test_cycles_for_matches_single_estimates():
    m = PipelineModel()
    p = api.plan("TADD", (10, 224), "f32", "a5", valid=(10, 192))
    rows = np.array([1, 2, 3, 8, 20, 33, 5])
    chunks = np.array([1, 3, 60, 2, 20, 7, 100])
    got = m.cycles_for(p.body[0], outer=rows, inner=chunks)
    tpl = m.template(p.body[0])
    want = [m.program_cycles(tpl, (r, c)) for r, c in zip(rows, chunks)]
    assert got == pytest.approx(want)


@pytest.mark.parametrize("op, cols, kw", [("TROWEXPAND", 256, {}), ("TCOLEXPANDADD", 192, {}), ("TPARTADD", 192, {}),
                                          ("TRECIP", 200, {"precision": "high_precision"})])
def test_warm_batches_the_simulations_and_cycles_equal_cost(op, cols, kw, monkeypatch):
    # programs differing only in trip counts (1..24 rows, with and without a column tail) are simulated by `warm` in
    # fewer runs; `cycles` of each then reads the cache, and equals the full `cost` of another model
    import costmodel.models.a5_pipeline as mod

    plans = [api.plan(op, (r, cols), "f32", "a5", valid=(r, vc), **kw) for r in range(1, 25) for vc in (cols, 130)]
    runs = []
    real = mod.simulate
    monkeypatch.setattr(mod, "simulate", lambda *a, **k: runs.append(1) or real(*a, **k))
    unwarmed = PipelineModel(shipped())  # parameters given: a cache of its own, not the process's shared one
    for p in plans:
        unwarmed.cycles(p)
    one_by_one, runs[:] = len(runs), []
    m = PipelineModel(shipped())
    m.warm([p.body[0] for p in plans])
    assert 0 < len(runs) < one_by_one
    runs.clear()
    got = [m.cycles(p) for p in plans]
    assert not runs
    monkeypatch.setattr(mod, "simulate", real)
    ref = PipelineModel()
    assert got == [ref.cost(p)[0] for p in plans]


def test_models_of_the_parameters_in_use_share_their_simulations(monkeypatch):
    # an estimate's strategies and anchors each build a model: the second one of the shipped parameters simulates
    # nothing the first did (a 1D TADD of 200 chunks runs the clip search, which once took most of an estimate)
    import costmodel.models.a5_pipeline as mod

    p = api.plan("TADD", (1, 64 * 200), "f32", "a5")
    monkeypatch.setattr(mod, "_SHARED", {})  # as a fresh process: what earlier tests simulated is gone
    runs = []
    real = mod.simulate
    monkeypatch.setattr(mod, "simulate", lambda *a, **k: runs.append(1) or real(*a, **k))
    first = PipelineModel().cycles(p)
    assert runs
    runs.clear()
    assert PipelineModel().cycles(p) == first and not runs
    assert PipelineModel(shipped()).cycles(p) == first and runs  # parameters given: its own cache


def test_bottleneck_names_the_binding_resource():
    ua = A5Uarch(**{**HAND.__dict__, "sfu16_ii": 8.0, "dispatch_width": 4.0})
    p = api.plan("TEXP", (1, 128 * 400), "f16", "a5")
    r = PipelineModel(ua).simulate(p)
    assert r.bottleneck == ("exu_sfu",)  # 400 exps x II 8 / 2 ports dominate
    assert "exu_sfu" in r.bottleneck_view().to_text() and "along the critical path" not in r.bottleneck_view().to_text()


def test_without_a_bottleneck_the_view_names_the_largest_critical_path_term():
    from costmodel.models.a5_pipeline_views import BottleneckView

    view = BottleneckView(1000.0, (("exu_alu", 300.0), ("frontend", 150.0)), (),
                          (("startup", 20.0), ("latency", 900.0), ("drain", 80.0)))
    text = view.to_text()
    assert "no single bound" in text and "along the critical path, latency" in text and "takes 90.0 % of" in text


def test_cost_is_the_estimate_contract():
    p = api.plan("TMINS", (16, 200), "f32", "a5", valid=(16, 190), scalar=1.0)
    cycles, bd = PipelineModel().cost(p)
    assert cycles == pytest.approx(sum(v for _, v in bd))
    e = api.estimate("TMINS", (16, 200), "f32", "a5", valid=(16, 190), scalar=1.0, verify=False, model="pipeline")
    assert e.model == "pipeline" and e.cycles == pytest.approx(cycles)


def test_conformance_on_every_a5_family():
    from costmodel.catalog import instruction
    from costmodel.errors import PtoCostError

    m = PipelineModel()
    seen = set()
    for _, row in api.catalog().iterrows():
        op = row["name"] if "name" in row else row.iloc[0]
        try:
            inst = instruction(op)
            p = api.plan(op, (4, 128), "f32" if "f32" in str(row.to_dict()) else "f16", "a5")
        except (PtoCostError, Exception):
            continue
        r = m.simulate(p, trace=False)
        assert math.isfinite(r.cycles) and r.cycles > 0, op
        assert max(v for _, v in r.bounds) <= r.cycles + 1e-6, op
        seen.add(getattr(inst, "family", op))
    assert len(seen) >= 5


# --------------------------------------------------------------------------------------------------------
def test_timeline_view():
    p = api.plan("TADD", (2, 224), "f32", "a5", valid=(2, 192))
    r = PipelineModel().simulate(p)
    text = r.timeline(max_iterations=1).to_text()
    assert "vadd" in text and "D" in text and "E" in text
    assert "more dynamic instructions not shown" in text
    d = r.timeline().to_dict()
    assert d["rows"] and all(row["dispatch"] <= row["issue"] <= row["done"] for row in d["rows"])
    # 4 rows of 4 chunks, two of each shown: a row's own instructions carry the row index alone and appear for
    # rows 0 and 1 (the chunk loop's counter is stale there), chunk instructions carry both indices
    r = PipelineModel().simulate(api.plan("TMINS", (4, 288), "f32", "a5", valid=(4, 256)))
    rows = r.timeline().to_dict()["rows"]
    per_row = [row["iterations"] for row in rows if "per-row" in row["instruction"]]
    assert per_row == [[0], [1]]
    chunks = [row["iterations"] for row in rows if row["instruction"].startswith("vmins")]
    assert chunks == [[0, 0], [0, 1], [1, 0], [1, 1]]


def test_a_long_timeline_puts_several_cycles_in_a_column_so_every_row_has_its_marks():
    """The high-precision TRECIP runs a 25-step sequence after its loads: ~400 cycles, more than the chart's 160
    columns; every shown instruction still gets its D and E, and no shape loop was clipped."""
    r = PipelineModel().simulate(api.plan("TRECIP", (1, 8), "f32", "a5", precision="high_precision"))
    text = r.timeline(max_iterations=1).to_text()
    lines = text.splitlines()
    step, t0 = (int(x) for x in re.search(r"from cycle (\d+) .*each column (\d+) cycles", lines[0]).groups()[::-1])
    assert step > 1 and lines[1].startswith("bound by:")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("[iters]"))
    ruler = lines[at].split()[-2]  # [iters] dispatch issue done bound by unit RULER instruction
    width, start = len(ruler), lines[at].index(ruler)
    # the line above writes each `|` column's first cycle there
    labels = lines[at - 1][start:start + width]
    marks = [c for c, ch in enumerate(ruler) if ch == "|"]
    assert marks == list(range(0, width, 10)) and set(ruler) == {"|", "-"}
    assert [int(m.group()) for m in re.finditer(r"\d+", labels)] == [t0 + c * step for c in marks][:len(labels.split())]
    assert all(labels[m.start() - 1:m.start()] in ("", " ") and m.start() in marks for m in re.finditer(r"\d+", labels))
    charts = [ln[start:start + width] for ln in lines[at + 1:] if ln.startswith("[")]
    assert len(charts) > 30 and all(set(c) <= set(".D=eE*") and set(c) - {"."} for c in charts)
    assert all(("D" in c) == ("E" in c) and ("D" in c) != ("*" in c) for c in charts)  # one column: `*`
    assert charts[-1].rstrip(".")[-1] in "E*"  # the last store is inside the chart, not cut off
    assert not r.trace_clipped
    wide = PipelineModel().simulate(api.plan("TMINS", (8, 4096), "f16", "a5"))
    assert wide.trace_clipped
    capped = wide.timeline(max_iterations=30, max_lines=20).to_text()
    assert "(first 30 iterations of each loop, and at most 20 rows)" in capped


def test_cli_plan_timeline():
    from typer.testing import CliRunner

    from cli.app import app

    res = CliRunner().invoke(app, ["plan", "TADD", "--shape", "2x224", "--valid", "2x192", "--dtype", "f32",
                                   "--arch", "a5", "--timeline"])
    assert res.exit_code == 0, res.output
    assert "__VEC_SCOPE__" in res.output and "timeline from cycle" in res.output and "bounds" in res.output
    # the simulation's figure is told apart from what `estimate` answers for the same request
    e = api.estimate("TADD", (2, 224), "f32", "a5", valid=(2, 192), verify=False)
    assert f"`estimate` (model {e.model}) gives {e.cycles:.2f}" in res.output


def test_cli_plan_chrome_trace(tmp_path):
    from typer.testing import CliRunner

    from cli.app import app

    out = tmp_path / "t.json"
    args = ["plan", "TMINS", "--shape", "4x288", "--valid", "4x256", "--dtype", "f32", "--arch", "a5"]
    res = CliRunner().invoke(app, [*args, "--chrome-trace", str(out), "--timeline-iterations", "1"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    tl = PipelineModel().simulate(api.plan("TMINS", (4, 288), "f32", "a5", valid=(4, 256))).timeline(max_iterations=1)
    want = sorted(tl.to_dict()["rows"], key=lambda r: (r["issue"], r["index"]))
    events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    tracks = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    # one event per dynamic instruction of the first iteration of each loop, on a track of its unit, issue to done
    assert len(events) == len(want) and len(want) < len(tl.trace)
    for e, row in zip(events, want):
        assert tracks[e["tid"]].split(" #")[0] == row["unit"] and e["args"]["iterations"] == row["iterations"]
        assert e["ts"] == row["issue"] and e["ts"] + e["dur"] == row["done"] and e["args"]["dispatch"] <= e["ts"]
    assert {"load0", "exu0", "store"} <= set(tracks.values()) and doc["otherData"]["cycles"] == tl.trace.end
    # the viewers need the events of one track to nest: a pipelined unit's overlapping instructions get lanes
    res = CliRunner().invoke(app, ["plan", "TADD", "--shape", "32x512", "--dtype", "f32", "--arch", "a5",
                                   "--chrome-trace", str(out), "--timeline-iterations", "4"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    by_track: dict[int, list] = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            by_track.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_track.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    assert "load0 #2" in names and len(names) == len(by_track)


def test_shipped_parameters_are_complete_and_documented():
    ua, rows = read_params()
    assert set(rows) == set(PARAM_NAMES)
    assert ua == shipped()
    for name, row in rows.items():
        assert row["source"], name
        if row["source"].startswith("fitted"):
            assert row["stderr"] != "" and int(row["n_obs"]) > 0, name


def test_unknown_parameter_is_rejected(tmp_path):
    from costmodel.errors import PtoCostError

    f = tmp_path / "p.csv"
    f.write_text("name,value,stderr,unit,n_obs,source\nbogus,1,,cycles,0,x\n")
    with pytest.raises(PtoCostError, match="bogus"):
        read_params(f)


def test_fit_recovers_known_parameters_on_synthetic_data():
    """Synthetic trace from known parameters: the fit finds them again (lmfit-style certified check)."""
    import pandas as pd

    from fit.pipeline_fit import build_cases, fit_pipeline, predict_cases

    truth = A5Uarch(agu_ii=0.7, sfu32_ii=4.0, sfu32_latency=12.0)
    rows = []
    for r, c in [(1, 64), (1, 640), (1, 1280), (3, 192), (10, 640), (20, 1280), (3, 1280), (10, 128)]:
        for op in ("TEXP", "TADD"):
            rows.append({"arch": "a5", "op": op, "dtype": "fp32", "dst_dtype": "", "rows": r, "cols": c,
                         "valid_rows": r, "valid_cols": c, "vf_impl_kind": "VFIMPL_DEFAULT" if r == 1 else "VFIMPL_1D_NO_POST_UPDATE",
                         "op_params": "", "round_mode": "", "saturation_mode": "", "extra": "", "strategy": ""})
    frame = pd.DataFrame(rows)
    cases = build_cases(frame)
    frame["measured_cycles"] = predict_cases(cases, truth)[cases.row_case]
    start = A5Uarch(agu_ii=0.4, sfu32_ii=3.0, sfu32_latency=16.0)
    fit = fit_pipeline(frame, cases=build_cases(frame), init=start, windows=(24,), max_nfev=30)
    assert fit.uarch.agu_ii == pytest.approx(0.7, abs=0.05)
    assert fit.uarch.sfu32_ii == pytest.approx(4.0, abs=0.2)


def test_fit_refuses_fewer_rows_than_free_parameters():
    """Three rows cannot pin the classes three programs use: an exact fit would be written as if estimated."""
    import pandas as pd

    from costmodel.errors import TraceError
    from fit.pipeline_fit import build_cases, fit_pipeline, predict_cases

    frame = pd.DataFrame([{"arch": "a5", "op": "TADD", "dtype": "fp32", "dst_dtype": "", "rows": 1, "cols": c,
                           "valid_rows": 1, "valid_cols": c, "vf_impl_kind": "VFIMPL_DEFAULT", "op_params": "",
                           "round_mode": "", "saturation_mode": "", "extra": "", "strategy": ""}
                          for c in (64, 640, 1280)])
    cases = build_cases(frame)
    frame["measured_cycles"] = predict_cases(cases, A5Uarch())[cases.row_case]
    with pytest.raises(TraceError, match=r"free parameters .* 3 usable a5 rows; it needs at least"):
        fit_pipeline(frame, cases=build_cases(frame), windows=(24,), max_nfev=5)


def test_own_parameters_are_those_no_other_op_exercises():
    """Leave-one-op-out can only learn what other ops exercise: TEXP alone uses the fp32 SFU class, TCVT alone a
    conversion class and (4:1 narrowing) the packing store; TADD shares everything it uses with the others."""
    import pandas as pd

    from fit.pipeline_fit import build_cases, own_parameters

    def row(op, dtype, dst="", cols=640):
        return {"arch": "a5", "op": op, "dtype": dtype, "dst_dtype": dst, "rows": 1, "cols": cols, "valid_rows": 1,
                "valid_cols": cols, "vf_impl_kind": "VFIMPL_DEFAULT", "op_params": "", "round_mode": "",
                "saturation_mode": "", "extra": "", "strategy": ""}

    frame = pd.DataFrame([row("TADD", "fp32"), row("TEXP", "fp32"), row("TCVT", "fp32", "fp8_e4m3"),
                          row("TMINS", "fp32")])
    own = own_parameters(build_cases(frame))
    assert set(own["TEXP"]) == {"sfu32_latency", "sfu32_ii"}
    assert {"cvt_n4_latency", "pack_store_serial"} <= set(own["TCVT"])
    assert not {n for n in own["TCVT"] if n.startswith(("sfu", "alu", "mul"))}
    assert own["TADD"] == [] and "startup" not in own["TMINS"]


def test_shipped_fit_on_measured_rows(measured_dir):
    """The shipped parameters explain the measured A5 file outside the known-unexplained groups."""
    from fit.pipeline_fit import build_cases, predict_cases
    from fit.traces import check_trace, read_trace

    good, _ = check_trace(read_trace(measured_dir / "a5_vf_cycles.csv"))
    cases = build_cases(good)
    pred = predict_cases(cases, shipped())[cases.row_case]
    err = np.abs(pred - good["measured_cycles"].to_numpy(float)) / good["measured_cycles"].to_numpy(float)
    simple = good["op"].isin(["TADD", "TSUB", "TMUL", "TMINS", "TNEG", "TEXP", "TSQRT", "TDIVS"]).to_numpy()
    assert err[simple].mean() < 0.05
    assert np.isfinite(pred).all()


def test_fit_command_reports_pipeline_accuracy_and_where_it_wrote(tmp_path):
    """`fit --model pipeline` says how well the fitted classes explain the trace (in-sample: its CV is the
    benchmark) and where the parameters went, not a formula row count."""
    import subprocess
    import sys

    import pandas as pd

    from fit.pipeline_fit import build_cases, predict_cases

    rows = [{"arch": "a5", "op": op, "dtype": "fp32", "dst_dtype": "", "rows": r, "cols": c, "valid_rows": r,
             "valid_cols": c, "vf_impl_kind": "VFIMPL_DEFAULT", "op_params": "", "round_mode": "",
             "saturation_mode": ""} for op in ("TADD", "TEXP")
            for r, c in [(1, 64), (1, 128), (1, 192), (1, 320), (1, 640), (2, 128), (3, 64)]]
    frame = pd.DataFrame(rows)
    cases = build_cases(frame)
    frame["measured_cycles"] = np.round(predict_cases(cases, A5Uarch(sfu32_ii=3.0))[cases.row_case])
    trace, params, formula = tmp_path / "t.csv", tmp_path / "pipe.csv", tmp_path / "formula.csv"
    frame.to_csv(trace, index=False)
    r = subprocess.run([sys.executable, "-m", "cli", "fit", str(trace), "--model", "pipeline",
                        "--pipeline-output", str(params)], capture_output=True, text=True, timeout=600,
                       env={**__import__("os").environ, "COLUMNS": "200"}, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "in-sample" in r.stdout and "MAPE nan" not in r.stdout
    assert f"wrote the A5 pipeline parameters to {params}" in r.stdout
    # not the file the models read: the output says how to use it
    assert f"PTO_COST_PIPELINE_PARAMS={params.resolve()}" in r.stdout.replace("\n", "")
    assert "parameter rows" not in r.stdout and not formula.exists()
    got, written = read_params(params)
    assert got.sfu32_ii == pytest.approx(3.0, abs=0.3)
    # a class no TADD or TEXP program uses keeps the shipped fit's value and source, and the report says so: a
    # partial trace refines the table in use, as the formula fit does
    ua, shipped_rows = read_params()
    assert got.cvt_w4_latency == ua.cvt_w4_latency and written["cvt_w4_latency"] == shipped_rows["cvt_w4_latency"]
    assert shipped_rows["cvt_w4_latency"]["source"].startswith("fitted on")
    assert "as a5_pipeline_params.csv fitted them" in " ".join(r.stdout.split()) and "cvt_w4_latency" in r.stdout
