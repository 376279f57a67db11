"""pto-cost: cycle cost models, plan emulators and tuning tools for PTO tile instructions.

Public API: `estimate`, `compare`, `plan`, `catalog`, `golden`, `sweep`, `best_strategy`, `modelled_dtypes`.
"""
from .api import (best_strategy, catalog, compare, compare_estimates, estimate, estimate_request, modelled_dtypes, plan,
                  request)
from .errors import PtoCostError
from .golden import golden
from .sweep import sweep

__version__ = "0.1.0"

__all__ = ["estimate", "compare", "best_strategy", "sweep", "compare_estimates", "plan", "catalog", "modelled_dtypes", "golden", "request",
           "estimate_request",
           "PtoCostError", "__version__"]
