"""On/off flags spelled as text (request parameters, CLI values, trace columns, lowering-table conditions).

One spelling table for the whole tool: `1 true yes on` and `0 false no off`, in any case.
"""
from __future__ import annotations

from typing import Any

from .errors import ParamError

TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})


def truthy(value: Any) -> bool:
    """Whether `value` spells a true flag; anything else (including unknown text) is False."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in TRUE


def flag(value: Any, what: str) -> bool:
    """Return the flag `value` spells (a bool passes through); raise ParamError naming `what` for other text."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE | FALSE:
        return text in TRUE
    raise ParamError(f"{what} {value!r}: expected true or false (also 1/0, yes/no, on/off)")
