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
