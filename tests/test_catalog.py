import csv

import pytest

from costmodel.catalog import families, instruction, instructions
from costmodel.dtypes import all_dtypes, dtype
from costmodel.errors import UnknownOpError, UnsupportedDtypeError

from .conftest import SHARED

CANONICAL = {d.name for d in all_dtypes()} | {"any"}


def test_every_reference_instruction_is_catalogued():
    path = SHARED / "reference" / "isa_catalog.csv"
    if not path.exists():
        pytest.skip("../shared/reference is not present")
    with open(path, newline="") as fh:
        names = {row["name"] for row in csv.DictReader(fh)}
    ours = {i.name for i in instructions()}
    assert len(names) == 166
    assert names <= ours
    assert {"BlockReduceMax", "BlockReduceMin", "BlockReduceSum"} <= ours


def test_dtype_tokens_are_canonical():
    for inst in instructions():
        for arch in ("a2a3", "a5"):
            for tok in inst.dtypes_on(arch):
                assert all(part in CANONICAL for part in tok.split(">")), (inst.name, arch, tok)


def test_lookup_is_case_insensitive_and_suggests():
    assert instruction("tmins").name == "TMINS"
    with pytest.raises(UnknownOpError, match="did you mean .*TMINS"):
        instruction("TMINZ")


def test_dtype_support_per_arch():
    tmins = instruction("TMINS")
    tmins.check_dtype("a2a3", dtype("f16"))
    with pytest.raises(UnsupportedDtypeError, match="accepted: i32 i16 f16 f32"):
        tmins.check_dtype("a2a3", dtype("u8"))
    assert "u8" in tmins.dtypes_on("a5")


def test_modelled_families_have_semantics_columns():
    for inst in instructions():
        if inst.family in ("unary", "binary", "binary_scalar", "partial", "col_expand", "col_expand_binary",
                           "row_expand", "row_expand_binary", "block_reduce"):
            assert inst.kernel and inst.domain, inst.name
    assert "binary_scalar" in families()


def test_a_refused_dtype_lists_the_accepted_ones_marking_those_without_a_plan():
    import costmodel
    from costmodel.errors import UnsupportedDtypeError

    for kw in ({"dtype": "u8"}, {"dtype": "f16", "dst_dtype": "f32"}):
        with pytest.raises(UnsupportedDtypeError, match=r"f16 f32 i32 \(not modelled\) i16 \(not modelled\)"):
            costmodel.estimate("TROWSUM", "16x64", arch="a2a3", verify=False, **kw)
