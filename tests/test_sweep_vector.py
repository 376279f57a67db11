"""Vectorised sweeps: closed forms == plan path, the pipeline path's batched simulation, the sweep contract."""
import math

import numpy as np
import pytest

from costmodel import api
from costmodel.models.a5_pipeline import PipelineModel


def test_cycles_for_keeps_the_trips_of_non_shape_loops():
    # TRECIP high_precision has a `steps` loop (the mantissa iterations) inside the chunk loop; cycles_for varies
    # only the rows and chunks loops, so each point must cost what the plan of that shape costs
    prog = api.plan("TRECIP", (4, 192), "f32", "a5", valid=(4, 130), precision="high_precision").body[0]
    shapes = [(3, 130), (5, 64), (30, 190)]
    got = PipelineModel().cycles_for(prog, inner=[math.ceil(vc / 64) for _, vc in shapes],
                                     outer=[vr for vr, _ in shapes])
    for (vr, vc), value in zip(shapes, got):
        plan = api.plan("TRECIP", (vr, 192), "f32", "a5", valid=(vr, vc), precision="high_precision")
        assert value == PipelineModel().cost(plan)[0]


@pytest.mark.parametrize("op, dtype, strategy", [("TADD", "f32", "2d-no-post-update"), ("TMINS", "f16", "2d-post-update")])
def test_cycles_for_rows_from_one_prefix_simulation_equal_the_plans(op, dtype, strategy):
    # every row count 1..30 of one chunk count: rows 2..24 come out of one simulation of 24 rows (in-order
    # dispatch), 1 and the extrapolated 25..30 from their own; each must equal the plan of that shape
    cols, vc = 256, 200
    kind = "VFIMPL_" + strategy.upper().replace("-", "_")
    prog = api.plan(op, (4, cols), dtype, "a5", valid=(4, vc), vf_impl_kind=kind).body[0]
    epr = 2048 // int(dtype[1:])
    rows = np.arange(1, 31)
    model = PipelineModel()
    if strategy == "2d-post-update":
        got = model.cycles_for(prog, inner=np.full(rows.size, vc // epr), outer=rows)
    else:
        got = model.cycles_for(prog, inner=np.full(rows.size, math.ceil(vc / epr)), outer=rows)
    for r, value in zip(rows.tolist(), got):
        plan = api.plan(op, (r, cols), dtype, "a5", valid=(r, vc), vf_impl_kind=kind)
        assert plan.strategy == strategy
        assert value == PipelineModel().cost(plan)[0], r
