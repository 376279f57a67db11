"""The exceptions the library raises for bad requests; the CLI turns each into one line and exit 2."""


class PtoCostError(ValueError):
    """Base class: a request the library cannot serve. The message names the problem and what is accepted."""


class UnknownOpError(PtoCostError):
    """The instruction name is not in the catalogue."""


class NotModelledError(PtoCostError):
    """The instruction is in the catalogue, but no lowering exists for it on this arch yet."""


class UnsupportedDtypeError(PtoCostError):
    """The element type is unknown, or the instruction does not accept it on this arch."""


class ShapeError(PtoCostError):
    """A malformed shape, or a valid region / layout the tile rules forbid."""


class StrategyError(PtoCostError):
    """A forced strategy that does not exist or is illegal for the request."""


class ParamError(PtoCostError):
    """A missing or illegal op parameter (scalar, round mode, mask, strides, ...)."""


class TraceError(PtoCostError):
    """A malformed trace or parameter file."""
