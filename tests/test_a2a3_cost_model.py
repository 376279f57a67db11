"""The A2/A3 intrinsic model: conformance properties, and the worked examples of costmodel.md §6 with the
upstream stub constants of costmodel.md §5 (tests/data/upstream_stub_params.csv)."""
import pytest
from hypothesis import given, strategies as st

import costmodel
from costmodel import lower
from costmodel.api import request
from costmodel.models.a2a3_intrinsic import IntrinsicModel


@pytest.mark.parametrize("op,shape,dtype,valid,static,strategy,stub,count_aware", [
    ("TMINS", "64x64", "f16", None, False, "2LNormRowRpt", 96, 96),
    ("TMINS", "64x64", "f16", None, True, "1LNorm", 62, 62),
    ("TMINS", "16x200", "f32", "16x190", False, "2LNormRowRpt", 80, 80),
    ("TADD", "16x200", "f32", "16x190", False, "2LNormRowRpt", 138, 138),
    ("TMINS", "1x3600", "f16", None, False, "1LCount", 34, 63),
    ("TADD", "1x3600", "f16", None, False, "1LCount", 44, 102),
    ("TEXP", "1x3600", "f16", None, False, "1LNorm", 91, 91),
])
def test_worked_examples(stub_params, op, shape, dtype, valid, static, strategy, stub, count_aware):
    req = request(op, shape, dtype, valid=valid, static_valid=static)
    assert lower.resolve_strategy(req)[0] == strategy
    cycles, _ = IntrinsicModel(stub_params).cost(lower.lower(req))
    # we charge counter-mode calls for the repeats the hardware walks (the "count-aware" column)
    assert cycles == pytest.approx(count_aware)


@given(op=st.sampled_from(["TMINS", "TADDS", "TADD", "TEXP", "TMUL"]), rows=st.integers(1, 40),
       cols_blocks=st.integers(1, 40), dt=st.sampled_from(["f16", "f32"]), data=st.data())
def test_model_conformance(op, rows, cols_blocks, dt, data):
    cols = cols_blocks * (16 if dt == "f16" else 8)
    vr = data.draw(st.integers(1, rows))
    vc = data.draw(st.integers(1, cols))
    req = request(op, f"{rows}x{cols}", dt, valid=f"{vr}x{vc}")
    model = IntrinsicModel()
    for s in lower.legal_strategies(req):
        p = lower.lower(req, s)
        cycles, breakdown = model.cost(p)
        assert cycles >= 0 and cycles == pytest.approx(sum(v for _, v in breakdown))
        assert model.cost(p) == (cycles, breakdown)


def test_counter_mode_charges_walked_repeats(stub_params):
    small = IntrinsicModel(stub_params).cost(lower.lower(request("TMINS", "1x3600", "f16")))[0]
    big = IntrinsicModel(stub_params).cost(lower.lower(request("TMINS", "1x7200", "f16")))[0]
    assert big - small == pytest.approx(57 - 29)  # ceil(7200/128) vs ceil(3600/128) repeats, 1 cycle each


def test_an_unmeasured_gm_store_costs_a_gm_copy_and_says_it_is_unmeasured():
    """costmodel.md §11: each GM copy instruction costs ~262 cycles; no UB->GM copy is measured, so a store is priced
    from that constant (it was the stub's 6-cycle pipe head: 7 cycles for a store against 263 for the same load) and
    the estimate says so; a measured op's estimate does not."""
    store = costmodel.estimate("TSTORE", "16x128", "i32", valid="5x7", verify=False)
    load = costmodel.estimate("TLOAD", "16x128", "i32", valid="5x7", verify=False)
    assert 0.8 * load.cycles < store.cycles < 1.25 * load.cycles
    assert any("no measured row exercises copy_ubuf_to_gm_align" in n for n in store.notes)
    assert not any("no measured row" in n for n in load.notes)
    assert not any("no measured row" in n for n in costmodel.estimate("TMINS", "64x64", "f16", verify=False).notes)


def test_a_class_measured_in_other_dtypes_is_named_with_them():
    """vmins is measured in f16, i16 and i32; TMINS f32 reads its shared values: the note says which dtypes were
    measured rather than that none was."""
    from costmodel.models.a2a3_intrinsic import measured_dtypes
    from costmodel.models.params import shipped

    (note,) = [n for n in costmodel.estimate("TMINS", "64x64", "f32", verify=False).notes if "no measured" in n]
    measured = measured_dtypes(shipped())["vmins"]
    assert "f32" not in measured and note.startswith(f"no measured f32 row exercises vmins (measured in {' '.join(measured)} only)")


def test_a_type_blind_intrinsic_takes_its_measured_twin_of_the_same_width():
    # a u16 or i16 vector_dup moves the bits an f16 one does: priced by the measured f16 row, not by the class's
    # unmeasured family value (which made TEXPANDS u16 twice the cost of f16)
    f16, u16, i16 = (costmodel.estimate("TEXPANDS", "64x128", dt, scalar=3, verify=False)
                     for dt in ("f16", "u16", "i16"))
    assert u16.cycles == f16.cycles == i16.cycles
    assert any("priced by its measured f16 row" in n for n in u16.notes)
    # an arithmetic intrinsic is not type-blind: i16 TADDS keeps its own class values
    assert costmodel.estimate("TADDS", "64x128", "i16", scalar=3, verify=False).cycles != \
        costmodel.estimate("TADDS", "64x128", "f16", scalar=3, verify=False).cycles


def test_an_unmeasured_class_note_says_where_its_price_comes_from():
    """A class no row measures is priced by its own reference constants (moved with its family) where costmodel.md
    §5 gives it some, by the default class's constants, or by its family's fitted values: each note says which."""
    def unmeasured(op, **kw):
        return [n for n in costmodel.estimate(op, "16x64", "f32", verify=False, **kw).notes
                if "no measured" in n or "which no measured row exercises" in n]

    assert unmeasured("TSEL") == ["no measured row exercises vsel: priced by its reference constants (costmodel.md §5), "
                                  "moved as the fit moved its cost family"]
    (note,) = unmeasured("TCMP", cmp_mode="lt")
    # the intrinsic is named, and why its mode prices below ne's (QA 50: eq 39 and ne 68 cycles, the note silent)
    assert note.startswith("vcmpv_lt has no stub row of its own") and "default-class constants" in note
    assert "vcmpv_ne and vcmpv_ge, which have their own, cost more" in note


@pytest.mark.parametrize("op, shape, dtype, intrinsic", [("TABS", (16, 256), "f16", "vabs"),
                                                         ("TMINS", (64, 64), "f16", "vmins")])
def test_an_estimate_states_the_held_out_error_of_the_measured_class_it_used(op, shape, dtype, intrinsic):
    """The typical error is the class row's own cross-validated error and count; a class measured on one row says so
    and calls it a weak guide, as an A5 key's note does (QA 52: one row was called 'each predicted ...')."""
    from costmodel.models.params import shipped

    row = shipped().lookup("a2a3", "intrinsic", "intrinsic", intrinsic, "per_repeat", dtype=dtype)
    (note,) = [n for n in costmodel.estimate(op, shape, dtype, verify=False).notes if n.startswith("typical error")]
    assert note.startswith(f"typical error {row.cv_mape:.1f} %") and f" {intrinsic} {dtype}, " in note
    if row.n_obs == 1:
        assert "from the one measured row" in note and "weak guide" in note and "each" not in note
    else:
        assert f"on the {row.n_obs} measured rows that use" in note and "weak guide" not in note


def test_a_plan_walking_more_repeats_of_a_class_than_any_measured_row_says_it_extrapolates():
    """The fit records, per class and dtype, the most repeats one measured plan walked (QA 52: TROWSUM f32 256x64,
    measured at 64x64 only, said nothing of it); within that extent the estimate says nothing of it."""
    from costmodel.models.params import shipped

    most = shipped().lookup("a2a3", "intrinsic", "intrinsic", "vcadd", "max_repeats", dtype="f32")
    assert most is not None and most.n_obs >= 1
    far = costmodel.estimate("TROWSUM", (256, 64), "f32", verify=False)
    assert most.value < 256
    assert any(f"256 vcadd f32 repeats lie beyond the measured rows that use vcadd (up to {most.value:g} in one plan)"
               in n for n in far.notes), far.notes
    near = costmodel.estimate("TROWSUM", (64, 64), "f32", verify=False)
    assert not any("lie beyond" in n for n in near.notes)
