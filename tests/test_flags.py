"""One spelling of on/off flags for request parameters, trace columns and lowering-table conditions."""
import pytest

from costmodel import lower
from costmodel.api import request
from costmodel.errors import ParamError
from costmodel.flags import flag, truthy
from fit.traces import request_kwargs


@pytest.mark.parametrize("text, value", [("1", True), ("TRUE", True), ("yes", True), (" on ", True),
                                         ("0", False), ("False", False), ("no", False), ("off", False)])
def test_spellings(text, value):
    assert flag(text, "x") is value and truthy(text) is value


def test_unknown_text_is_an_error_for_flag_and_false_for_truthy():
    with pytest.raises(ParamError, match=r"binary \(isBinary\) 'maybe': expected true or false"):
        request("TCOLSUM", "5x16", "f16", binary="maybe")
    assert truthy("maybe") is False and flag(True, "x") is True


def test_every_consumer_reads_the_same_spellings():
    assert lower.strategies(request("TCOLSUM", "5x16", "f16", binary="on"))[0] == "ColBinary"
    assert request("TLOAD", "4x64", "f32", gm_dynamic="yes").param("gm_dynamic") is True
    assert request("TCVT", "4x64", "f32", dst_dtype="i16", saturation="yes").param("saturation") == "on"
    with pytest.raises(ParamError, match="ambiguous"):  # an enum whose ON is 0 (isa.md §4.4): no 0/1 flag spelling
        request("TCVT", "4x64", "f32", dst_dtype="i16", saturation="1")
    row = {"op": "TCOLSUM", "arch": "a2a3", "dtype": "f16", "rows": 5, "cols": 16, "valid_rows": 5,
           "valid_cols": 16, "extra": "isBinary=1;isInPlace=yes", "op_params": "", "round_mode": "",
           "saturation_mode": ""}
    kw = request_kwargs(row)
    assert kw["binary"] is True and kw["in_place"] is True
