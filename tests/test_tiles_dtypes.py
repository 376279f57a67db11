import numpy as np
import pytest
from hypothesis import given, strategies as st

from costmodel.dtypes import all_dtypes, dtype
from costmodel.errors import ShapeError, UnsupportedDtypeError
from costmodel.tiles import Tile, parse_shape


@pytest.mark.parametrize("alias,name", [("fp16", "f16"), ("half", "f16"), ("float32", "f32"), ("int8", "i8"),
                                        ("bfloat16", "bf16"), ("FP32", "f32"), ("uint16", "u16"), ("int", "i32")])
def test_dtype_aliases(alias, name):
    assert dtype(alias).name == name


def test_dtype_widths_and_numpy_types():
    assert dtype("f16").np == np.float16
    assert dtype("bf16").np.itemsize == 2 and dtype("bf16").np.name == "bfloat16"
    assert dtype("fp8_e4m3").np.itemsize == 1
    assert dtype("fp4_e2m1").bits == 4
    assert not dtype("hif8").emulatable and not dtype("fp4_e1m2").emulatable
    names = {d.name for d in all_dtypes()}
    assert {"f16", "f32", "bf16", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "fp8_e4m3", "fp8_e5m2", "hif8",
            "fp4_e1m2", "fp4_e2m1"} <= names


def test_unknown_dtype_names_the_accepted_ones():
    with pytest.raises(UnsupportedDtypeError, match="known dtypes: f16 f32"):
        dtype("float7")


@pytest.mark.parametrize("text", ["64", "64x", "x64", "64*64", "a x b", "", "64x64x2", "-1x4"])
def test_malformed_shapes(text):
    with pytest.raises(ShapeError, match="malformed"):
        parse_shape(text)


@pytest.mark.parametrize("text", ["0x64", "64x0"])
def test_zero_dimension_rejected_for_tiles_but_not_for_valid(text):
    with pytest.raises(ShapeError, match="≥ 1"):
        parse_shape(text)
    assert 0 in parse_shape(text, allow_zero=True)


@given(st.integers(1, 300), st.integers(1, 300))
def test_parse_shape_roundtrip(r, c):
    assert parse_shape(f"{r}x{c}") == (r, c)


def test_valid_larger_than_tile():
    with pytest.raises(ShapeError, match="larger than the tile"):
        Tile.make("64x64", "f16", "65x64")


@pytest.mark.parametrize("shape,dt,ok", [("16x200", "f32", True), ("16x190", "f32", False), ("4x16", "f16", True),
                                         ("4x8", "f16", False), ("2x32", "i8", True), ("2x16", "i8", False),
                                         ("1x64", "fp4_e2m1", True), ("1x32", "fp4_e2m1", False)])
def test_row_major_rows_are_32_byte_multiples(shape, dt, ok):
    if ok:
        Tile.make(shape, dt)
    else:
        with pytest.raises(ShapeError, match="multiple of 32 B"):
            Tile.make(shape, dt)


def test_col_major_rule_checks_rows():
    Tile.make("8x1", "f32", layout="col_major")
    with pytest.raises(ShapeError, match="rows must be a multiple of 8"):
        Tile.make("6x1", "f32", layout="col_major")


def test_every_package_is_installed():
    """pyproject lists packages explicitly (data/ is mapped to pto_cost_data); a new subpackage must be listed."""
    import tomllib

    from .conftest import ROOT

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {str(p.parent.relative_to(ROOT)).replace("/", ".") for top in ("costmodel", "fit", "cli")
             for p in (ROOT / top).rglob("__init__.py")}
    assert found <= listed
    data = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["pto_cost_data"])
    assert {"*.csv"} <= data
