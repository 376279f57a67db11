"""Score a model against measurements: metrics overall, per op and per (op, dtype, dst dtype, op_params, strategy and
the op parameter columns the trace has)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from costmodel.errors import TraceError

from . import metrics
from .predict import predict_frame
from .traces import EXTRA_VARIANT, LINE, average_repeats, cell_text, param_columns, parse_extra, request_keys


# a group of validate's per-group table: one instruction variant on one strategy (TCVT per target type, TRECIP per
# precision, TSEL per mask variant)
GROUP_KEYS = ("arch", "op", "dtype", "dst_dtype", "op_params", "strategy")


@dataclass(frozen=True)
class ValidationReport:
    """Predictions plus the metric tables; `to_dict()` is JSON-ready."""

    predictions: pd.DataFrame
    overall: dict
    per_op: pd.DataFrame
    per_group: pd.DataFrame
    not_scored: pd.DataFrame  # rows without a prediction or a usable measurement, with the reason
    unit: str = "line"  # what the `line` column of `not_scored` counts: file lines, or Parquet rows ("row")

    @property
    def unmodelled(self) -> pd.DataFrame:
        """The rows not scored because the model could not price them."""
        return self.not_scored[self.not_scored["predicted_cycles"].isna()]

    def to_dict(self) -> dict:
        def records(df: pd.DataFrame) -> list[dict]:
            return [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()} for r in df.to_dict("records")]

        return {"overall": self.overall, "per_op": records(self.per_op), "per_group": records(self.per_group),
                "not_scored": records(self.not_scored)}


def validate_frame(trace: pd.DataFrame, *, model: str = "auto", progress=None,
                   tolerance: float | None = None) -> ValidationReport:
    """Predict every row of a measured trace and return the accuracy report (`progress` and `tolerance`, how far
    apart repeated runs of a case may read, as in predict_frame)."""
    if trace.empty:
        raise TraceError("the trace holds a header and no rows; nothing to validate")
    pred = predict_frame(trace, model=model, progress=progress, tolerance=tolerance)
    unusable = pred[LINE].isin(pred.attrs.get("measured_problems", ()))
    pred["measured_cycles"] = pd.to_numeric(pred["measured_cycles"], errors="coerce").where(~unusable)
    # a row not scored for its measurement says only that (predict's note adds the model's caveats)
    pred.loc[unusable, "note"] = pred.loc[unusable, LINE].map(pred.attrs.get("measured_notes", {}))
    if not pred["measured_cycles"].notna().any() and unusable.any():
        first = pred.loc[unusable].iloc[0]
        raise TraceError(f"no row has a usable measured_cycles value ({trace.attrs.get('line_unit', 'line')} "
                         f"{first[LINE]}: {first['note']})")
    if not pred["measured_cycles"].notna().any():
        raise TraceError("no row has a measured_cycles value: validate compares predictions with measurements "
                         "(`pto-cost predict` prices cases without them)")
    unmeasured = pred["predicted_cycles"].notna() & pred["measured_cycles"].isna() & ~unusable
    pred.loc[unmeasured, "note"] = "no measured_cycles to compare with"
    ok = pred["predicted_cycles"].notna() & pred["measured_cycles"].notna()
    scored = pred[ok]
    # repeated runs of a case (within the profiler's noise; conflicting ones were refused above) are one scored case
    # at their mean, as `fit` counts them
    scored, repeats = average_repeats(scored)
    scored = scored.assign(op=scored["op"].str.upper(), arch=scored["arch"].str.lower())  # tmins is TMINS
    overall = metrics.summary(scored["predicted_cycles"], scored["measured_cycles"])
    overall["rows"] = int(len(pred))
    overall["repeats"] = repeats
    overall["not_scored"] = int(len(pred) - len(scored) - repeats)
    overall["unmodelled"] = int(pred["predicted_cycles"].isna().sum())
    overall["strategies"] = metrics.strategy_choice(scored.assign(request=request_keys(scored).to_numpy()),
                                                    by=["request"])
    overall["models_used"] = {str(k): int(v) for k, v in scored["model"].value_counts().items()}
    per_op = metrics.grouped(scored, ["arch", "op"]) if len(scored) else pd.DataFrame()
    # op parameters named in columns of their own (a compare mode, a scalar) split groups too, where the trace has them
    params = [c for c in param_columns() if c in scored and (scored[c].map(cell_text) != "").any()]
    grouped = scored.assign(**{c: scored[c].map(cell_text).str.lower() for c in params})
    if "extra" in scored:  # so do the A2/A3 test parameters that choose a variant (TSQRT in place or not)
        grouped["variant_params"] = scored["extra"].map(lambda t: ";".join(
            f"{k}={v}" for k, v in sorted(parse_extra(t).items()) if k in EXTRA_VARIANT))
        params += ["variant_params"] if (grouped["variant_params"] != "").any() else []
    per_group = metrics.grouped(grouped, [*GROUP_KEYS, *params]) if len(scored) else pd.DataFrame()
    skipped = pred[~ok][[LINE, "arch", "op", "dtype", "predicted_cycles", "note"]].rename(columns={LINE: "line"})
    return ValidationReport(pred, overall, per_op, per_group, skipped, trace.attrs.get("line_unit", "line"))
