"""The sweep's array helpers against the plain numpy / Python they stand in for."""
import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from costmodel.vector import nan_unless, take_where
from costmodel.vector.frame import runs

floats = st.floats(allow_nan=True, allow_infinity=True, width=64)


@given(st.lists(st.tuples(st.booleans(), floats, floats), max_size=200))
def test_take_where_is_copyto_bit_for_bit(rows):
    cond = np.array([r[0] for r in rows], dtype=bool)
    values = np.array([r[1] for r in rows], dtype=float)
    out = np.array([r[2] for r in rows], dtype=float)
    expected = out.copy()
    np.copyto(expected, values, where=cond)
    got = take_where(cond, values, out)
    assert got is out
    assert got.view(np.int64).tolist() == expected.view(np.int64).tolist()


@given(st.lists(st.tuples(st.booleans(), floats.filter(lambda x: not (x == 0 and np.signbit(x)))), max_size=200))
def test_nan_unless_is_copyto_of_nan(rows):
    cond = np.array([r[0] for r in rows], dtype=bool)
    out = np.array([r[1] for r in rows], dtype=float)
    expected = out.copy()
    np.copyto(expected, np.nan, where=~cond)
    got = nan_unless(cond, out)
    assert np.array_equal(got, expected, equal_nan=True)
    assert np.isnan(got[~cond]).all()


def _reference_runs(values):
    starts = [i for i in range(len(values)) if i == 0 or not (values[i] == values[i - 1]
                                                             or (values[i] is None and values[i - 1] is None))]
    return starts, [values[i] for i in starts]


@given(st.lists(st.lists(st.sampled_from(["TADD", "TMINS", "f16", "", None]), min_size=0, max_size=40),
                min_size=1, max_size=4))
def test_runs_of_a_chunked_arrow_string_column(chunks):
    """Runs restart at every chunk (the grouping merges equal values), and a missing value is a run of its own
    value."""
    col = pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array([pa.array(c, type=pa.large_string())
                                                                 for c in chunks], type=pa.large_string())))
    flat = [v for c in chunks for v in c]
    boundaries = set(np.cumsum([len(c) for c in chunks])[:-1].tolist()) - {len(flat)}
    expected = sorted(set(_reference_runs(flat)[0]) | {b for b in boundaries if b < len(flat)})
    found = runs(col)
    if found is None:  # too many runs for grouping by runs (counting the restarts at chunk boundaries)
        assert len(expected) > max(64, len(flat) // 32)
        return
    starts, values = found
    assert [v if isinstance(v, str) else None for v in values] == [flat[i] for i in starts.tolist()]
    assert starts.tolist() == expected


def test_a_sweep_frame_whose_arrow_column_has_an_empty_chunk():
    """pd.concat can leave empty chunks in an Arrow string column; they must not shift the groups' values."""
    from costmodel import estimate
    from costmodel.sweep import sweep

    op = pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array(
        [pa.array([], type=pa.large_string()), pa.array(["TADD"] * 3, type=pa.large_string()),
         pa.array(["TMINS"] * 3, type=pa.large_string())])))
    out = sweep(pd.DataFrame({"op": op, "dtype": "f16", "rows": 16, "cols": 64}))
    assert out["op"].tolist() == ["TADD"] * 3 + ["TMINS"] * 3
    for name in ("TADD", "TMINS"):
        assert (out.loc[out["op"] == name, "cycles"] == estimate(name, shape=(16, 64), dtype="f16").cycles).all()
