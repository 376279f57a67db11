"""The output side of a sweep: per-row strategy tables (closed-form blocks or per-request results) turned into
output rows, result columns and the output frame (DESIGN.md §2).

Per row: strategy `default` gives the default strategy's row, `all` one row per legal strategy (the default
first), a name that strategy's row (matched case-insensitively; an illegal or unknown name gets NaN and a note
listing the legal ones); `best` is the first minimum in the order default, then the strategies as listed. String
columns are written once, as categoricals whose categories are the values present, sorted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

ASK_DEFAULT, ASK_ALL, ASK_UNKNOWN = -1, -2, -3


class Strings:
    """Interned output strings; entries hold their codes."""

    def __init__(self):
        self.codes: dict[str, int] = {"": 0}
        self.items: list[str] = [""]

    def code(self, s: str) -> int:
        c = self.codes.get(s)
        if c is None:
            c = self.codes[s] = len(self.items)
            self.items.append(s)
        return c


TEXT = ("strategy", "model", "best", "note")
WHY_LIMIT = 256  # distinct shapes of one block's rows naming an illegal strategy that get their own reason (the
# others point to `estimate`)


@dataclass(frozen=True)
class Why:
    """Why a named strategy is illegal at a shape: `shapes` are a group's static rows and cols and valid rows and
    cols (four arrays), of which `cols` (a slice or positions) are the rows of the table being added;
    `reason(shape, strategy)` is the lowering's sentence for one shape (None: none given)."""

    shapes: Any
    cols: Any
    reason: Any

    def at(self, positions: np.ndarray) -> np.ndarray:
        """Return the (4, n) shapes of the table's rows `positions`."""
        at = np.arange(len(self.shapes[0]))[self.cols][positions]
        return np.stack([np.asarray(a)[at] for a in self.shapes])


@dataclass
class Results:
    """Result columns of a frame's rows: `take[i]` is the input row of output row i (None: output row i is input
    row i), then cycles, default and the categorical string columns."""

    take: np.ndarray | None
    cycles: np.ndarray
    default: np.ndarray
    text: dict[str, Any]

    def __len__(self) -> int:
        return len(self.cycles)


def concat(results: list[Results], starts: list[int]) -> Results:
    """The results of consecutive partitions (starting at input rows `starts`) as one."""
    import pandas as pd

    take = None
    if any(r.take is not None for r in results):
        take = np.concatenate([(r.take if r.take is not None else np.arange(len(r))) + a
                               for r, a in zip(results, starts)])
    text = {}
    for name in TEXT:
        cats = sorted(set().union(*(r.text[name].categories for r in results)))
        index = {c: i for i, c in enumerate(cats)}
        small = np.int8 if len(cats) < 127 else np.int16 if len(cats) < 32767 else np.int32
        codes = [np.array([index[c] for c in r.text[name].categories], dtype=small)[r.text[name].codes]
                 for r in results]
        text[name] = pd.Categorical.from_codes(np.concatenate(codes), categories=cats, validate=False)
    return Results(take, np.concatenate([r.cycles for r in results]), np.concatenate([r.default for r in results]),
                    text)


def assemble(f, r: Results):
    """The output frame: the input columns (repeated for `all` rows), the strategy column replaced, the results."""
    import pandas as pd

    m = len(r)
    cols = {}
    for c in f.order:
        if c == "strategy":
            cols[c] = r.text["strategy"]
        elif c in f.const:
            v = f.const[c]
            cols[c] = pd.Categorical.from_codes(np.zeros(m, dtype=np.int8), [v]) if isinstance(v, str) else np.full(m, v)
        else:
            col = f.given.get(c, f.df[c])  # a nullable column with gaps keeps its type
            cols[c] = (col if r.take is None else col.take(r.take)).reset_index(drop=True)
    cols["cycles"] = r.cycles
    cols["model"] = r.text["model"]
    cols["default"] = r.default
    cols["best"] = r.text["best"]
    cols["note"] = r.text["note"]
    return pd.DataFrame(cols, copy=False)


@dataclass
class Caveats:
    """A block's model notes: `texts[per_strategy[j]]` for every row of strategy j, or, where rows of one strategy
    differ, `texts[codes[j, i]]` for row i (`codes` (strategies, rows), then `per_strategy` is unused)."""

    texts: tuple[str, ...]
    per_strategy: np.ndarray
    codes: np.ndarray | None = None

    def take(self, rows) -> Caveats:
        """The notes of the given rows (a slice or positions)."""
        return self if self.codes is None else Caveats(self.texts, self.per_strategy, self.codes[:, rows])


class Entries:
    """Output rows collected from blocks: per part the input rows (a slice or positions), the rank of each entry
    among its row's entries (`all` rows), and per field an array or one value for the whole part."""

    def __init__(self, asked: list[str]):
        self.strings = Strings()
        self.asked = asked                                       # distinct `strategy` values of the frame
        self.asked_code = np.array([self.strings.code(a) for a in asked], dtype=np.int32)
        self.named = np.array([a not in ("default", "all") for a in asked], dtype=bool)
        self.parts: list[dict[str, Any]] = []
        self.expanded = False

    def _ask_index(self, strategies: tuple[str, ...]) -> np.ndarray:
        """Per distinct asked value: ASK_DEFAULT, ASK_ALL, the matching strategy's index or ASK_UNKNOWN."""
        lower = {s.lower(): j for j, s in enumerate(strategies)}
        return np.array([ASK_DEFAULT if a == "default" else ASK_ALL if a == "all" else lower.get(a.lower(), ASK_UNKNOWN)
                         for a in self.asked], dtype=np.int64)

    def _spelled(self, strategies: tuple[str, ...], ask: np.ndarray | None = None) -> np.ndarray:
        """Per distinct asked value: the code of the strategy of `strategies` it names in any letter case, else its
        own (`ask`: `_ask_index(strategies)`, where already known)."""
        ask = self._ask_index(strategies) if ask is None else ask
        return np.array([self.strings.code(strategies[k]) if k >= 0 else c for k, c in zip(ask, self.asked_code)],
                        dtype=np.int32)

    def _part(self, rows, **fields) -> None:
        self.parts.append({"rows": rows, **fields})

    def add(self, rows, asked: np.ndarray, strategies: tuple[str, ...], cycles: np.ndarray, legal: np.ndarray,
            default: np.ndarray, models: tuple[str, ...], best: np.ndarray | None = None,
            dval: np.ndarray | None = None, caveats: Caveats | None = None, why: Why | None = None,
            known=None) -> None:
        """Entries of rows with a table: `cycles` and `legal` are (strategies, rows), `default` indexes strategies
        (and is legal); `rows` are the input rows (a slice or positions); `best` and `dval` as `vector.best_of`
        fills them (computed here when not given); `caveats` the model's notes (none: every one ""); `why` says why
        a named strategy is illegal at a row's shape (without it, or past the first WHY_LIMIT shapes, the note points to
        `estimate`); `known()` the op's strategies, the order a note lists the legal ones in (as `estimate` does)."""
        from . import best_of

        S, m = legal.shape
        if m == 0:
            return
        sc = np.array([self.strings.code(s) for s in strategies], dtype=np.int32)
        mc = np.array([self.strings.code(x) for x in models], dtype=np.int32)
        caveats = caveats or Caveats(("",), np.zeros(S, dtype=np.int64))
        table = np.array([self.strings.code(t) for t in caveats.texts], dtype=np.int32)
        nc, cc = caveats.codes, table[caveats.per_strategy]  # nc: (S, m) indices into `table`, or None
        if best is None or dval is None:
            best, dval = np.empty(m, dtype=np.int64), np.empty(m)
            best_of(cycles, default, best, dval)
        ask = self._ask_index(strategies)
        if (ask == ASK_DEFAULT).all():  # every row wants its default strategy
            one_model = len(set(models)) == 1
            note = (cc, default) if nc is None else (table, np.take_along_axis(nc, default[None, :], 0)[0])
            self._part(rows, cycles=dval, strategy=(sc, default), model=mc[0] if one_model else (mc, default),
                       default=True, best=(sc, best), note=note)
            return
        best_code = sc[best]
        ar = np.arange(m)
        flat = np.ascontiguousarray(cycles).ravel()
        rows = np.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows
        k = ask[asked]
        single = k != ASK_ALL
        j = np.where(k >= 0, k, default)
        ok = single & ((k == ASK_DEFAULT) | ((k >= 0) & legal[np.maximum(k, 0), ar]))
        sel = np.flatnonzero(ok)
        js = j[sel]
        self._part(rows[sel], cycles=flat[js * m + sel], strategy=sc[js], model=mc[js], default=js == default[sel],
                   best=best_code[sel], note=cc[js] if nc is None else table[nc[js, sel]])
        bad = np.flatnonzero(single & ~ok)
        if len(bad):
            bits = (legal[:, bad] * (1 << np.arange(S))[:, None]).sum(axis=0)
            combo = np.stack([asked[bad], bits], axis=1)
            uniq, inv = np.unique(combo, axis=0, return_inverse=True)
            if why is not None:  # one note per (asked, legal set, shape): the first WHY_LIMIT shapes, the rest -1
                shapes = why.at(bad).T
                first = (np.unique(shapes, axis=0, return_inverse=True)[1].ravel() < WHY_LIMIT)[:, None]
                combo = np.concatenate([combo, np.where(first, shapes, -1)], axis=1)
                uniq, inv = np.unique(combo, axis=0, return_inverse=True)
            notes = []
            order = {s: i for i, s in enumerate(known() if known is not None else strategies)}
            for a, b, *shape in uniq.tolist():
                # the op's order, as `estimate` lists them: rows whose defaults differ share a note
                names = sorted((s for i, s in enumerate(strategies) if b >> i & 1), key=lambda s: order.get(s, len(order)))
                if ask[a] < 0:
                    said = f"unknown strategy {self.asked[a]!r} for this op and arch"
                else:
                    reason = why.reason(tuple(shape), strategies[ask[a]]) if shape and shape[0] >= 0 else None
                    said = f"strategy {strategies[ask[a]]} is not legal here" + (
                        f": {reason}" if reason else " (`pto-cost estimate` with it says why)")
                notes.append(self.strings.code(f"{said}; legal: {', '.join(names)}"))
            self._part(rows[bad], cycles=np.nan, strategy=self._spelled(strategies, ask)[asked[bad]], model=0,
                       default=False, best=best_code[bad], note=np.array(notes, dtype=np.int32)[inv.ravel()])
        many = np.flatnonzero(~single)
        if len(many):
            lg = legal[:, many]
            d = default[many]
            s_idx = np.arange(S)[:, None]
            rank = np.where(s_idx == d[None, :], 0, np.cumsum(lg & (s_idx != d[None, :]), axis=0))
            s, r = np.nonzero(lg)
            self._part(rows[many][r], rank=rank[s, r], cycles=flat[s * m + many[r]], strategy=sc[s], model=mc[s],
                       default=s == d[r], best=best_code[many][r],
                       note=cc[s] if nc is None else table[nc[s, many[r]]])
            self.expanded = True

    def add_errors(self, rows, asked: np.ndarray, note: str | np.ndarray, known=None) -> None:
        """One entry per row: NaN cycles and the reason (one message, or interned codes per row); the strategy is
        kept when a name was asked for, spelled as the op's own (`known()`: its strategies) where it is one."""
        m = len(asked)
        if m == 0:
            return
        spelled = self.asked_code
        if known is not None and self.named[asked].any():
            spelled = self._spelled(known())
        strat = np.where(self.named[asked], spelled[asked], 0)
        code = self.strings.code(note) if isinstance(note, str) else note
        self._part(rows, cycles=np.nan, strategy=strat, model=0, default=False, best=0, note=code)

    def results(self, n: int) -> Results:
        """The result columns of the `n` input rows (expanded for `all` rows)."""
        if self.expanded:
            listed = [p["rows"] for p in self.parts if not isinstance(p["rows"], slice)]
            counts = np.bincount(np.concatenate(listed), minlength=n) if listed else np.zeros(n, dtype=np.int64)
            for p in self.parts:
                if isinstance(p["rows"], slice):
                    counts[p["rows"]] += 1
            offsets = np.cumsum(counts) - counts
            where = [offsets[p["rows"]] + p.get("rank", 0) for p in self.parts]
            take = np.repeat(np.arange(n), counts)
            m = int(counts.sum())
        else:
            where = [p["rows"] for p in self.parts]
            take, m = None, n
        out = {"cycles": np.empty(m), "default": np.empty(m, dtype=bool)}
        for p, pos in zip(self.parts, where):
            for name, arr in out.items():
                arr[pos] = p[name]
        text = {name: self._categorical(name, where, m) for name in TEXT}
        return Results(take, out["cycles"], out["default"], text)

    def _categorical(self, name: str, where: list, m: int):
        """The string field `name` of every part as one pandas Categorical whose categories are the values present,
        sorted (so the dtype depends neither on the order rows were evaluated in nor on how a frame was partitioned).

        A part holds an interned code, an array of codes, or (table, index) — codes table[index]; the output codes
        are written once, through small per-part tables."""
        import pandas as pd

        used = np.zeros(len(self.strings.items), dtype=bool)
        for p in self.parts:
            v = p[name]
            if isinstance(v, tuple):
                table, index = v
                used[table[np.bincount(index, minlength=len(table)) > 0]] = True
            else:
                used[v] = True
        present = np.flatnonzero(used)
        names = [self.strings.items[c] for c in present.tolist()]
        order = sorted(range(len(names)), key=names.__getitem__)
        small = np.int8 if len(order) < 127 else np.int16 if len(order) < 32767 else np.int32
        cat = np.full(len(self.strings.items), -1, dtype=small)
        cat[present[order]] = np.arange(len(order))
        codes = np.empty(m, dtype=small)
        for p, pos in zip(self.parts, where):
            v = p[name]
            if isinstance(v, tuple):
                if isinstance(pos, slice):
                    np.take(cat[v[0]], v[1], out=codes[pos])
                else:
                    codes[pos] = cat[v[0]][v[1]]
            else:
                codes[pos] = cat[v]
        return pd.Categorical.from_codes(codes, categories=[names[o] for o in order], validate=False)
