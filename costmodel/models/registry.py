"""Which cost models exist per arch, and which one `model="auto"` picks."""
from __future__ import annotations

from ..errors import ParamError

_MODELS = {
    ("a2a3", "formula"): ("costmodel.models.a2a3_intrinsic", "IntrinsicModel"),
    ("a5", "pipeline"): ("costmodel.models.a5_pipeline", "PipelineModel"),  # fitted VF pipeline simulation
    ("a5", "formula"): ("costmodel.models.a5_formula", "A5FormulaModel"),  # fitted closed forms per key
    ("a5", "anchored"): ("costmodel.models.a5_anchored", "AnchoredPipeline"),  # pipeline + measured ops' correction
}
_AUTO = {"a2a3": "formula", "a5": "formula+anchored"}  # a5: formula where the key has parameters, else anchored


def register(arch: str, name: str, module: str, cls: str, *, auto: bool = False) -> None:
    """Declare a model class; `auto=True` makes it the arch's default."""
    _MODELS[(arch, name)] = (module, cls)
    if auto:
        _AUTO[arch] = name


def names(arch: str) -> tuple[str, ...]:
    return tuple(n for a, n in _MODELS if a == arch)


def check_name(name: str | None) -> str:
    """Return the model `name` spells in any letter case if some arch has a model of that name (or it is `auto`);
    PtoCostError listing them otherwise. (Whether the arch of a request has it is `model_for`'s to say.)"""
    known = ("auto", *dict.fromkeys(n for _, n in _MODELS))
    key = (name or "").strip().lower()
    if key not in ("", *known):
        raise ParamError(f"unknown model {name!r}; accepted: {', '.join(known)}")
    return key or "auto"


def model_for(arch: str, name: str = "auto"):
    """Return an instance of the named cost model for `arch` (`auto` = the arch's default)."""
    import importlib

    name = check_name(name)
    key = _AUTO.get(arch, "formula") if name == "auto" else name
    if "+" in key:
        from .auto import FormulaThenPipeline

        first, second = key.split("+")
        return FormulaThenPipeline(model_for(arch, first), model_for(arch, second))
    if (arch, key) not in _MODELS:
        where = sorted(a for a, n in _MODELS if n == key)
        raise ParamError(f"model {key!r} is {'/'.join(where)} only, not {arch}; accepted on {arch}: auto, "
                           f"{', '.join(names(arch))}")
    mod, cls = _MODELS[(arch, key)]
    return getattr(importlib.import_module(mod), cls)()
