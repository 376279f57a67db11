"""emulate/verify: every output buffer a golden returns is checked under its own CheckSpec.

The arg ops (values and indices) are the several-outputs case; a family's `check_spec` hook decides, per
output buffer, what is compared and what may change.
"""
from dataclasses import replace

import numpy as np

from costmodel import lower
from costmodel.api import request
from costmodel.catalog import instruction
from costmodel.emulate import verify as verify_mod
from costmodel.emulate.verify import check_spec_for, verify
from costmodel.isa_a2a3 import VecOp


def _argmax_plan():
    return lower.lower(request("TPARTARGMAX", "4x64", "f16", idx_dtype="i32", valid="3x40"))


def _without_index_writes(plan):
    return replace(plan, body=tuple(i for i in plan.body if not (isinstance(i, VecOp) and i.dst.buf == "dst_idx")))


def test_default_spec_is_per_output_buffer():
    plan = _argmax_plan()
    inst = replace(instruction(plan.op), eps=1e-3)  # a non-zero catalogue eps (TPARTARGMAX's own is 0)
    values, idx = (check_spec_for(plan, plan.buffer(n), inst) for n in ("dst", "dst_idx"))
    assert values.eps == 1e-3 and idx.eps == 0  # the catalogue eps for f16 values, exact for the i32 indices
    for spec in (values, idx):
        assert spec.checked.shape == (4, 64) and spec.checked[:3, :40].all() and spec.checked.sum() == 3 * 40
        assert not spec.free.any()


def test_both_outputs_are_checked_and_named_in_the_note():
    v = verify(_argmax_plan())
    assert v.ok is True
    assert v.note.startswith("dst: 3x40 elements match") and "dst_idx: 3x40 elements match the golden (eps 0)" in v.note


def test_a_wrong_index_output_is_reported_under_its_buffer():
    v = verify(_without_index_writes(_argmax_plan()))
    assert v.ok is False and v.mismatches and {m[0] for m in v.mismatches} == {"dst_idx"}


def test_a_family_spec_applies_to_the_buffer_it_is_given(monkeypatch):
    # a hook that exempts only dst_idx: the plan that never writes indices then verifies, its values still checked
    seen = []

    def hook(plan, buf, spec):
        seen.append(buf.name)
        if buf.name != "dst_idx":
            return spec
        return replace(spec, checked=np.zeros_like(spec.checked), free=np.ones_like(spec.free))

    monkeypatch.setitem(verify_mod._CHECK_SPECS, "partial", hook)
    plan = _argmax_plan()
    assert verify(_without_index_writes(plan)).ok is True
    assert sorted(seen) == ["dst", "dst_idx"]
    no_values = replace(plan, body=tuple(i for i in plan.body if not (isinstance(i, VecOp) and i.dst.buf == "dst")))
    v = verify(no_values)
    assert v.ok is False and {m[0] for m in v.mismatches} == {"dst"}
