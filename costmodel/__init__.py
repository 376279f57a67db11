"""pto-cost: cycle cost models, plan emulators and tuning tools for PTO tile instructions.

Public API: `estimate`, `compare`, `plan`, `catalog`, `golden`, `sweep`, `best_strategy`, `modelled_dtypes`; the
results `Estimate` and `Plan`; the errors, each a `PtoCostError`.
"""
from .api import (best_strategy, catalog, compare, compare_estimates, estimate, estimate_request, modelled_dtypes, plan,
                  request)
from .errors import (NotModelledError, ParamError, PtoCostError, ShapeError, StrategyError, TraceError, UnknownOpError,
                     UnsupportedDtypeError)
from .golden import golden
from .plan import Plan
from .request import Estimate
from .sweep import sweep

__version__ = "0.1.0"

__all__ = ["estimate", "compare", "best_strategy", "sweep", "compare_estimates", "plan", "catalog", "modelled_dtypes", "golden", "request",
           "estimate_request", "Estimate", "Plan",
           "PtoCostError", "UnknownOpError", "UnsupportedDtypeError", "ShapeError", "StrategyError", "ParamError",
           "NotModelledError", "TraceError", "__version__"]
