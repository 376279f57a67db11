"""Small helpers for the sentences the tool prints."""
from __future__ import annotations


def counted(n: int, noun: str) -> str:
    """Return `1 request`, `2 requests`."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
