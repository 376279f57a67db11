"""On/off flags spelled as text (request parameters, CLI values, trace columns, lowering-table conditions).

One spelling table for the whole tool: `1 true yes on` and `0 false no off`, in any case.
"""
from __future__ import annotations

import numbers
from typing import Any

from .errors import ParamError

TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})


def truthy(value: Any) -> bool:
    """Whether `value` spells a true flag; anything else (including unknown text) is False."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in TRUE


FLAG_PARAMS = ("static_valid", "in_place", "binary", "gm_dynamic")  # the request parameters that are flags


def flag(value: Any, what: str) -> bool:
    """Return the flag `value` spells: a bool, None (not given: False), a number 0 or 1 (a float column with gaps
    holds 1.0), or text; raise ParamError naming `what` for anything else."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if type(value).__name__ == "NAType":  # pandas' missing value in a nullable column: not given
        return False
    if isinstance(value, numbers.Number) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in TRUE | FALSE:
        return text in TRUE
    raise ParamError(f"{what} {shown(value)}: expected true or false (also 1/0, yes/no, on/off)")


def shown(value: Any) -> str:
    """A value as an error message quotes it: text in quotes, a number (numpy's too) as its digits."""
    return repr(value) if isinstance(value, str) else str(value)
