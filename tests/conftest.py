import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, max_examples=40,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", deadline=None, max_examples=400,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.fixture
def measured_dir() -> Path:
    """The hardware measurements in ../shared/measured; tests that need them skip cleanly without it."""
    path = SHARED / "measured"
    if not path.is_dir():
        pytest.skip("../shared/measured is not present")
    return path


@pytest.fixture
def stub_params():
    """The upstream stub's intrinsic constants (costmodel.md §5), independent of refits of data/formula_params.csv."""
    from costmodel.models.params import read_table

    return read_table(Path(__file__).parent / "data" / "upstream_stub_params.csv")
