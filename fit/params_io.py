"""Write parameter tables atomically, replacing only the rows a fit produced (every other row is kept)."""
from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

from costmodel.models.a5_formula import family_body_dtype
from costmodel.models.params import COLUMNS, FORMAT_VERSION, ParamRow, path_in_use, read_table

from costmodel.errors import PtoCostError
from costmodel.wording import counted

from .io import atomic_path, check_writable


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


@dataclass(frozen=True)
class Written:
    """What `write_params` wrote: rows in the file, rows the fit replaced or added, and rows of the arches and models
    the fit covers kept from the old table because the fit did not refit them (other ops or classes; or values
    fitted there from observations this fit lacks)."""

    rows: int
    refitted: int
    kept: int
    held: tuple[dict, ...] = ()  # op keys or classes whose better-measured table rows this fit's few did not replace
    dropped: tuple[ParamRow, ...] = ()  # old rows the fit's own rows made stale (`merge_rows`)
    old_forms: tuple[str, ...] = ()  # "a5 TMINS f32 2d-post-update": loop forms of refitted keys left as they were
    moved: tuple[str, ...] = ()  # families whose unmeasured dtypes now copy another dtype's body (`family_moves`)
    arches: tuple[str, ...] = ()  # the arches of the rows the fit wrote (replaced or added)
    discarded: int = 0  # rows of the file a write that merges nothing (`fit --fresh`) replaces

    def old_forms_note(self) -> str:
        """Say which loop forms of refitted A5 keys keep the old table's values ("" when none)."""
        if not self.old_forms:
            return ""
        return (f"{len(self.old_forms)} loop form(s) of refitted keys kept from the table, as this trace measures no "
                f"program of their 1D/2D shape: {', '.join(self.old_forms[:6])}{', ...' if len(self.old_forms) > 6 else ''}")

    def dropped_note(self) -> str:
        """Say which old rows the write removes and why ("" when none)."""
        if not self.dropped:
            return ""
        per_dtype = sorted({f"{r.name} {r.dtype}" for r in self.dropped if r.scope == "intrinsic"})
        keys = sorted({f"{r.name} {r.dtype} {r.strategy}" for r in self.dropped if r.scope == "op"})
        parts = []
        if per_dtype:
            parts.append(f"per-dtype rows of classes refitted without their own dtype effect ({', '.join(per_dtype[:6])}"
                         f"{', ...' if len(per_dtype) > 6 else ''}): the class and shared dtype rows price them now")
        if keys:
            parts.append(f"terms of another form of keys refitted here ({', '.join(keys[:6])}"
                         f"{', ...' if len(keys) > 6 else ''})")
        return f"{len(self.dropped)} old row(s) removed: " + "; ".join(parts)

    @property
    def other(self) -> int:
        """Rows of the arches and models the fit did not cover, left as they were."""
        return self.rows - self.refitted - self.kept


def _key(r: ParamRow) -> tuple:
    return (r.arch, r.form, r.scope, r.name, r.dtype, r.dst_dtype, r.strategy, r.op_params, r.term)


OWN_SCOPES = ("op", "intrinsic")  # rows of one op key (A5) or one intrinsic class and dtype (A2/A3)
# observations of one op key or class that replace a better-measured table row: one more than the three free
# coefficients of an A5 key's curve (p0, p1, p5), so the fit has a residual left (two rows at 1 and 3 chunks fitted
# TADD f32 at 4.7 cycles a chunk, 645 cycles at 1x8192 where the table's 31 rows give 226)
MIN_OWN_OBS = 4


def replaces(new: ParamRow, old: ParamRow | None) -> bool:
    """Whether a freshly fitted row shared by many ops (A5 dispatch, address bound, shared bodies and families; A2/A3
    control and dtype rows) replaces the table's row of its key: always where the table has none; never with a value
    the fit had no observations for (a family or prior value); otherwise only when the fit saw at least as many
    observations as the table's (a trace of one op must not move what every op reads). Rows of one op key or
    intrinsic class go together (`own_verdicts`)."""
    if old is None:
        return True
    if not new.n_obs:
        return False
    return new.n_obs >= old.n_obs


# an A5 key's measured extent (models/a5_formula.py `_beyond_extent`): read with the coefficients of its loop form
EXTENT_TERMS = ("max_chunks", "max_rows", "max_row_chunks")


def op_group(name: str, dtype: str, dst_dtype: str, op_params: str) -> tuple:
    """The `_group` of an A5 op key's rows (what a row's `follows` names)."""
    return ("a5", "vf", "op", name, dtype, dst_dtype, op_params)


def _decided_by(r: ParamRow, verdicts: dict) -> tuple | None:
    """Return the group whose `own_verdicts` entry decides whether `r` replaces the table's row: the key it follows
    (`ParamRow.follows`: a family row, or a dtype sharing the body of the one measured most), else its own group for
    an op key or class row; None for a shared row (`replaces` decides)."""
    if r.follows is not None and r.follows in verdicts:
        return r.follows
    return _group(r) if r.scope in OWN_SCOPES else None


def _replaces_row(r: ParamRow, old: ParamRow | None, verdicts: dict, whole: set[str] = frozenset()) -> bool:
    """Whether `r` replaces the table's row `old` of its key (`_decided_by`). A family row (an unmeasured dtype's
    price, copied from the op's most measured body) also needs the body it copies to be the one the table's copies,
    or one measured as often: two TADD i64 rows must not reprice bf16 and i32 where the table copies f32's 31. A
    shared row neither fit observed goes with a whole refit of its arch (`whole`: `_whole_refits`), as an unobserved
    class does (the A2/A3 scalar loop's per-element cost moves with the trace's speed like every prior)."""
    decider = _decided_by(r, verdicts)
    if decider is None:
        return replaces(r, old) or (old is not None and not r.n_obs and not old.n_obs and r.arch in whole)
    if not verdicts[decider][0]:
        return False
    if r.scope != "family" or old is None or r.follows is None:
        return True
    body = family_body_dtype(old.source)  # '' where the table's row does not name it: the verdict decides
    return r.n_obs >= old.n_obs or body in ("", r.follows[4])


def _group(r: ParamRow) -> tuple:
    """The rows that are one fit's and go together: an A5 op body (op, types, variant) in every loop form, its forms
    sharing one fitted body (fit/a5_smooth_fit.py); an A2/A3 intrinsic class in every dtype, whose per-dtype rows a
    refitted class row makes stale (`merge_rows`)."""
    if r.scope == "intrinsic":
        return (r.arch, r.form, r.scope, r.name)
    return (r.arch, r.form, r.scope, r.name, r.dtype, r.dst_dtype, r.op_params)


def _with_coefficients(new: list[ParamRow]) -> list[ParamRow]:
    """`new` without the extent rows of an A5 loop form the fit wrote no coefficients for (an extent is read with its
    form's coefficients, so alone it would pair with the table's)."""
    priced = {_key(r)[:-1] for r in new if r.scope in ("op", "body") and r.term not in EXTENT_TERMS}
    return [r for r in new if not (r.scope in ("op", "body") and r.term in EXTENT_TERMS and _key(r)[:-1] not in priced)]


def _extents(rows: list[ParamRow]) -> dict[tuple, dict[str, float]]:
    """Per op body (`_group`), the most chunks and rows any of its loop forms was measured over (EXTENT_TERMS)."""
    out: dict[tuple, dict[str, float]] = {}
    for r in rows:
        if r.scope == "op" and r.term in EXTENT_TERMS[:2]:
            most = out.setdefault(_group(r), {})
            most[r.term] = max(most.get(r.term, 0.0), r.value)
    return out


def own_verdicts(old: list[ParamRow], new: list[ParamRow], whole: set[str]) -> dict[tuple, tuple[bool, int, int]]:
    """Return, per op body or intrinsic class the fit wrote (`_group`), (whether its rows replace the table's, the
    observations of the fit's and of the table's: the most any of its rows records). A group's rows are one fit's
    (coefficients, extents, every loop form or dtype), so they replace the table's together or not at all: where the
    table has none; when the fit observed it as often as the table did; or when it observed it at least MIN_OWN_OBS
    times over the chunks and rows the table's rows span (your measurements of an op are the ones to price it by,
    once they can pin its curve where the table's could); never from no observation, except a guess replacing a
    guess in a whole refit of its arch (`whole`: `_whole_refits`)."""
    n_old: dict[tuple, int] = {}
    n_new: dict[tuple, int] = {}
    for rows, n in ((old, n_old), (new, n_new)):
        for r in rows:
            if r.scope in OWN_SCOPES:
                n[_group(r)] = max(n.get(_group(r), 0), r.n_obs)
    reach_old, reach_new = _extents(old), _extents(new)

    def spans(g: tuple) -> bool:
        theirs, ours = reach_old.get(g, {}), reach_new.get(g, {})
        return all(ours[t] >= v for t, v in theirs.items() if t in ours)  # a fit that records no extent: unknown

    return {g: (g not in n_old or (n > 0 and (n >= n_old[g] or (n >= MIN_OWN_OBS and spans(g))))
                or (n == 0 and not n_old[g] and g[0] in whole), n, n_old.get(g, 0))
            for g, n in n_new.items()}


def _whole_refits(old: list[ParamRow], new: list[ParamRow]) -> set[str]:
    """Return the arches whose shared control rows the fit observed as often as the table's fit did (A2/A3: every
    measured row reads them): a fit of as rich a trace, whose values for classes neither it nor the table observed
    (their family's fitted value, moved with the trace's overall speed: fit/a2a3_fit.py) replace the table's. A
    partial trace's guesses do not, and no guess replaces a value the table fitted from observations."""
    def most(rows: list[ParamRow]) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in rows:
            if r.scope == "control":
                out[r.arch] = max(out.get(r.arch, 0), r.n_obs)
        return out

    theirs, ours = most(old), most(new)
    return {a for a, n in ours.items() if n > 0 and n >= theirs.get(a, 0)}


def held_keys(old: list[ParamRow], new: list[ParamRow]) -> tuple[dict, ...]:
    """Return, per op key or intrinsic class the fit observed but whose table rows it does not replace (too few
    observations, or fewer than the table's over a narrower extent: `own_verdicts`; or its curve is one fit with such
    a key's: `ParamRow.follows`), what was kept: the key's fields, the table's and the fit's observations, and a
    sentence saying so."""
    new = _with_coefficients(new)
    whole = _whole_refits(old, new)
    verdicts = own_verdicts(old, new, whole)
    reach_old, reach_new = _extents(old), _extents(new)
    out, seen = [], set()
    by_key = {_key(r): r for r in old}
    for r in new:
        g = _group(r)
        # a family row kept though the key it copies is replaced (a key kept is named below, its family with it)
        if (r.scope == "family" and g not in seen and r.follows is not None and verdicts.get(r.follows, (False,))[0]
                and not _replaces_row(r, by_key.get(_key(r)), verdicts, whole)):
            seen.add(g)
            was = by_key[_key(r)]
            body = family_body_dtype(was.source)
            out.append({"arch": r.arch, "scope": r.scope, "name": r.name, "dtype": "*", "dst_dtype": r.dst_dtype,
                        "op_params": r.op_params, "table_observations": was.n_obs, "trace_observations": r.n_obs,
                        "message": f"{r.arch} {r.name} family {r.op_params or ''}".rstrip() + ": kept the table's "
                                   f"prices of unmeasured dtypes ({body or 'another dtype'}'s body, "
                                   f"{counted(was.n_obs, 'observation')}); this trace's most measured {r.name} dtype, "
                                   f"{r.follows[4]}, was measured {counted(r.n_obs, 'time')}"})
        if r.scope not in OWN_SCOPES or g in seen:
            continue
        _, n_new, n_old = verdicts.get(g, (True, 0, 0))
        decider = _decided_by(r, verdicts)
        lead = decider if decider != g else None
        if verdicts.get(decider, (True, 0, 0))[0] or not n_new:
            continue
        seen.add(g)
        dtype = r.dtype if r.scope == "op" and r.dtype != "*" else ""
        what = " ".join(x for x in (r.arch, r.name, dtype, f"-> {r.dst_dtype}" if r.dst_dtype else "", r.op_params)
                        if x)
        times = counted(n_new, "time")
        if lead is not None:
            why = (f"its curve is one fit with {' '.join(x for x in lead[3:] if x)}'s, whose table rows this trace does "
                   "not replace")
        elif n_new < MIN_OWN_OBS:
            why = f"this trace measures it {times}, fewer than the {MIN_OWN_OBS} that replace them"
        else:
            theirs, ours = reach_old.get(g, {}), reach_new.get(g, {})
            why = (f"this trace measures it {times} over {_reach(ours)}, the table's rows over {_reach(theirs)}: "
                   "fewer observations replace them only where they span as many chunks and rows")
        out.append({"arch": r.arch, "scope": r.scope, "name": r.name, "dtype": dtype or "*", "dst_dtype": r.dst_dtype,
                    "op_params": r.op_params, "table_observations": n_old,
                    "trace_observations": n_new,
                    "message": f"{what}: kept the table's values ({counted(n_old, 'observation')}); {why}"})
    return tuple(out)


def _reach(most: dict[str, float]) -> str:
    """Return "up to 12 chunks in 3 rows" for a body's `_extents`."""
    chunks, rows = int(most.get("max_chunks", 0)), int(most.get("max_rows", 0))
    return (f"up to {counted(chunks, 'chunk')}"
            + (f" in {counted(rows, 'row')}" if "max_rows" in most else ""))


def merge_rows(old: list[ParamRow], new: list[ParamRow]) -> tuple[list[ParamRow], int, list[ParamRow], list[str]]:
    """Return (the merged rows, how many of `old` were kept in the (arch, form) groups `new` covers, the old rows
    removed as stale, the loop forms of replaced A5 keys the fit wrote nothing for, whose old rows stay): each new row
    replaces the old row of its key (arch, form, scope, name, types, strategy, variant, term) where `replaces` or,
    for the rows of one op key or class, `own_verdicts` says so; old rows of keys the fit did not write (another
    op's, another class's) stay. So a partial trace refines a table instead of replacing it. Rows are grouped by
    (arch, form) in sorted order, each group keeping its order, so the layout does not depend on which fit wrote
    last."""
    by_key = {_key(r): r for r in old}
    new = _with_coefficients(new)
    whole = _whole_refits(old, new)
    verdicts = own_verdicts(old, new, whole)
    refit_classes = set()
    for r in new:
        if _replaces_row(r, by_key.get(_key(r)), verdicts, whole):
            by_key[_key(r)] = r
            if r.scope == "intrinsic" and r.dtype == "*":
                refit_classes.add((r.arch, r.form, r.name, r.term))
    # rows the fit's own rows make stale go unless this fit wrote them too: an A2/A3 class refitted without dtype
    # effects would still be priced by its old per-dtype rows (a (class, dtype) row beats the class row), and an A5
    # key refitted in another form (smooth or hard max) would keep terms of the old one (its q)
    written = {_key(r) for r in new}
    refit_keys = {_key(r)[:-1] for r in new if r.scope == "op" and by_key.get(_key(r)) is r}
    dropped = []
    for k, r in list(by_key.items()):
        stale = ((r.scope == "intrinsic" and r.dtype != "*" and (r.arch, r.form, r.name, r.term) in refit_classes)
                 or (r.scope == "op" and k[:-1] in refit_keys))
        if stale and k not in written:
            dropped.append(by_key.pop(k))
    merged = list(by_key.values())
    fresh = {id(r) for r in new}
    groups = {(r.arch, r.form) for r in new}
    kept = sum(id(r) not in fresh and (r.arch, r.form) in groups for r in merged)
    # a fit measuring only 1D (or 2D) programs of a key cannot price its other shape of loop (no dispatch bound for
    # it): those forms keep the old fit's values, complete per form (each row set carries its own bounds and q)
    replaced = {_group(r) for r in new if r.scope == "op" and by_key.get(_key(r)) is r}
    old_forms = sorted({" ".join(x for x in (r.arch, r.name, r.dtype, f"-> {r.dst_dtype}" if r.dst_dtype else "",
                                             r.op_params, r.strategy) if x)
                        for r in merged if r.scope == "op" and id(r) not in fresh and _group(r) in replaced})
    return sorted(merged, key=lambda r: (r.arch, r.form)), kept, dropped, old_forms


def merge_base(path: str | os.PathLike) -> Path:
    """Return the table a fit written to `path` merges into (and refines, fit/a5_anchor.py): the file at `path`, or
    where there is none the table in use (a new file is a whole table)."""
    target = Path(path)
    return target if target.exists() else Path(path_in_use())


def check_params_path(path: str | os.PathLike, *, pipeline: bool = False) -> None:
    """Raise PtoCostError unless `fit` can write a parameter table at `path`: a writable .csv that is either new or a
    table of that kind (not the trace, not another CSV)."""
    check_writable(path)
    target = Path(path)
    if target.suffix.lower() != ".csv":
        raise PtoCostError(f"parameter table {path}: unknown format {target.suffix or '(no extension)'!r}; "
                           "accepted: .csv")
    if not target.exists():
        return
    if pipeline:
        from costmodel.models.a5_pipeline_uarch import read_params

        read_params(target)
    else:
        read_table(target)


def write_params(rows: list[ParamRow], path: str | os.PathLike, *, merge: bool = True,
                 into: Path | None = None) -> Written:
    """Write `rows` atomically, merged into the existing table at `path`, or where there is none into the table in
    use ($PTO_COST_PARAMS, else the shipped one: a new file is a whole table); returns what was written. With `into`,
    write that temporary file, which the caller's `atomic_path` of `path` renames (so two tables can be written
    together: both or neither)."""
    target = Path(path)
    if into is None:
        with atomic_path(target) as tmp:
            return write_params(rows, target, merge=merge, into=tmp)
    rows, written = planned_table(rows, target, merge=merge)
    with open(into, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([FORMAT_VERSION, r.arch, r.form, r.scope, r.name, r.dtype, r.dst_dtype, r.strategy,
                        r.op_params, r.term, _fmt(float(r.value)), _fmt(r.stderr), r.n_obs, _fmt(r.cv_mape), r.source])
    return written


def planned_table(rows: list[ParamRow], path: str | os.PathLike, *, merge: bool = True
                  ) -> tuple[list[ParamRow], Written]:
    """Return (the rows `write_params` writes at `path`, what that write is: `Written`) without writing: `rows`
    merged into the table at `path`, or where there is none into the table in use."""
    target = Path(path)
    fresh, kept, held, dropped, old_forms, moved, discarded = {id(r) for r in rows}, 0, (), [], [], (), 0
    if merge:
        old = read_table(merge_base(target)).rows
        held = held_keys(old, rows)
        rows, kept, dropped, old_forms = merge_rows(old, rows)
        moved = family_moves(old, [r for r in rows if id(r) in fresh])
    elif target.exists():
        discarded = len(read_table(target).rows)
    return rows, Written(len(rows), sum(id(r) in fresh for r in rows), kept, held, tuple(dropped), tuple(old_forms),
                         moved, tuple(sorted({r.arch for r in rows if id(r) in fresh})), discarded)


def family_moves(old: list[ParamRow], written: list[ParamRow]) -> tuple[str, ...]:
    """Say, per A5 family whose written rows copy another dtype's body than the table's did, which dtype its
    unmeasured dtypes are priced by now (a TADD i32 trace of 31 rows reprices bf16 and i8 from i32 instead of f32)."""
    by_key = {_key(r): r for r in old}
    out = {}
    for r in written:
        was = by_key.get(_key(r))
        if r.scope != "family" or was is None:
            continue
        now, then = family_body_dtype(r.source), family_body_dtype(was.source)
        if now and then and now != then:
            out.setdefault((r.arch, r.name, r.op_params), (
                f"{r.arch} {r.name}{' ' + r.op_params if r.op_params else ''} family: its unmeasured dtypes are priced "
                f"by {now}'s body now ({counted(r.n_obs, 'observation')}), where the table copied {then}'s ({was.n_obs})"))
    return tuple(out.values())
