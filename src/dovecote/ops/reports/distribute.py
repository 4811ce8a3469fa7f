"""``distribute``: file every spool letter into exactly one box.

The spool is read-only here (MED-INV-9). Each letter is routed by the ownership
law (``routing.route``); a letter whose project box is out of reach on this
machine (absent repository, or a ledger that cannot be read) stays pending with
reason ``unreachable`` and its box is named, but the decision itself is the same
everywhere. Which letters stay pending, and why, is decided by ``plan`` alone:
``doctor`` calls the same function, so the two can never disagree.

A letter already filed in any report box is never filed again (checked by id
against every readable report box, not only the one the law names today). So a
roster change does not move or copy letters already filed: they stay where they
are, are counted where they are, and the receipt's ``elsewhere`` names those
that today's law would file in another box.

A warm ``Dovecote`` remembers how far into the spool it has filed and which
letters are still pending, so a re-run routes only new letters and retries the
pending ones. The memory is dropped whenever the roster, the spool or any box
file was replaced, and then everything is planned again (appending 0 for what is
already filed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import msgspec

from dovecote.errors import StoreError
from dovecote.model.addresses import Address
from dovecote.model.letters import Letter
from dovecote.ops.warm.registry import Kind
from dovecote.roster.routing import Route, route
from dovecote.store.core import Cursor

if TYPE_CHECKING:
    from dovecote.ops.context import Context

#: box address -> its id index, or None when this machine cannot read it
Filed = dict[Address, Mapping[str, Letter] | None]


class Distribution(msgspec.Struct):
    """What one distribution run did, counted honestly.

    ``to_project`` and ``to_home`` count every spool letter filed there
    (including ones already filed by an earlier run, counted in the box that
    holds them); ``appended`` counts only lines written by this run.
    ``elsewhere`` lists the filed letters today's law would file in another box.
    """

    spool_total: int
    appended: int
    to_project: int
    to_home: int
    pending: list[str]
    pending_detail: list[dict[str, object]]
    elsewhere: list[str] = msgspec.field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "spool_total": self.spool_total,
            "appended": self.appended,
            "to_project": self.to_project,
            "to_home": self.to_home,
            "pending": self.pending,
            "pending_detail": self.pending_detail,
            "elsewhere": {"letters": len(self.elsewhere), "ids": self.elsewhere},
        }


class Plan(msgspec.Struct):
    """What the law and this machine's boxes say about some spool letters."""

    #: box -> letters to append there (not yet in any report box)
    groups: dict[Address, list[Letter]] = msgspec.field(default_factory=dict)
    #: letters already in a report box, counted in the box holding them
    to_project: int = 0
    to_home: int = 0
    #: letter id -> (letter, route with its reason: unreachable, ambiguous_name, unknown_project)
    pending: dict[str, tuple[Letter, Route]] = msgspec.field(default_factory=dict)
    #: ids of filed letters that today's law would file elsewhere
    elsewhere: set[str] = msgspec.field(default_factory=set)


def filed(ctx: Context) -> Filed:
    """Every report box with its id index; None for a box this machine cannot read."""
    out: Filed = {}
    for addr in ctx.roster.report_boxes():
        if not ctx.store.reachable(addr):
            out[addr] = None
            continue
        try:
            out[addr] = ctx.store.read(addr).index
        except StoreError:  # the ledger is there but cannot be read here: as good as absent
            out[addr] = None
    return out


def plan(
    ctx: Context,
    letters: Iterable[Letter],
    boxes: Filed,
    routes: dict[tuple[str | None, str | None], Route] | None = None,
) -> Plan:
    """Decide, for each field report, where it is, where it goes, or why it waits.

    Pure given ``boxes``: the one rule for "pending" (``distribute`` and
    ``doctor`` both call it). ``routes`` caches the law per (brain, repo).
    """
    cache = routes if routes is not None else {}
    readable = sorted(((a, ix) for a, ix in boxes.items() if ix is not None), key=lambda b: str(b[0]))
    out = Plan()
    for letter in letters:
        if not letter.is_report:
            continue
        rk = (letter.brain, letter.repo)
        r = cache.get(rk)
        if r is None:
            r = cache[rk] = route(letter.brain, letter.repo, ctx.index)
        holder = None
        for a, ix in readable:
            if letter.id in ix:
                holder = a
                break
        if holder is not None:  # already filed: it stays where it is
            if holder.kind == "home":
                out.to_home += 1
            else:
                out.to_project += 1
            if r.address != holder:
                out.elsewhere.add(letter.id)
            continue
        if r.address is None:
            out.pending[letter.id] = (letter, r)
        elif boxes.get(r.address) is None:
            out.pending[letter.id] = (letter, Route(r.address, r.name or str(r.address), "unreachable"))
        else:
            out.groups.setdefault(r.address, []).append(letter)
    return out


class DistributionState(msgspec.Struct):
    """What a warm handle remembers between runs: how far into the spool it has
    filed (``done`` letters, up to the spool's cursor), what is still pending, and
    where each report box's read stopped (a box replaced meanwhile drops it all)."""

    roster: str = ""
    cursors: dict[str, Cursor] = msgspec.field(default_factory=dict)
    done: int = 0
    to_project: int = 0
    to_home: int = 0
    pending: dict[str, tuple[Letter, Route]] = msgspec.field(default_factory=dict)
    routes: dict[tuple[str | None, str | None], Route] = msgspec.field(default_factory=dict)
    elsewhere: set[str] = msgspec.field(default_factory=set)


DISTRIBUTION: Kind[DistributionState] = Kind("distribution")


#: The cursor kept for a box that could not be read: no read after it is ever a resumption.
UNREADABLE = Cursor(-2, -1)


def _moved(ctx: Context, st: DistributionState) -> bool:
    """Was a report box replaced, or did it become (un)readable, since ``st`` last read it?
    Each box's cursor moves to where it stands now."""
    moved = False
    for addr in ctx.roster.report_boxes():
        label = str(addr)
        before = st.cursors.get(label)
        try:
            read = ctx.store.read(addr, after=before)
        except StoreError:  # unreadable here; plan() keeps its letters pending
            moved = moved or (before is not None and before != UNREADABLE)
            st.cursors[label] = UNREADABLE
            continue
        moved = moved or (read.fresh and before is not None)
        st.cursors[label] = read.cursor
    return moved


def distribute(ctx: Context) -> Distribution:
    with ctx.warm.lock_of(DISTRIBUTION):
        return _distribute(ctx)


def _distribute(ctx: Context) -> Distribution:
    st = ctx.warm.get(DISTRIBUTION)
    spool = ctx.store.read("spool", after=st.cursors.get("spool") if st is not None else None)
    if st is None or st.roster != ctx.roster.signature or spool.fresh or _moved(ctx, st):
        st = ctx.warm.put(DISTRIBUTION, DistributionState(ctx.roster.signature))
        spool = ctx.store.read("spool")
        _moved(ctx, st)
    todo = [lt for lt, _ in st.pending.values()]
    todo += spool.letters
    st.pending.clear()
    st.done += len(spool.letters)
    st.cursors["spool"] = spool.cursor
    p = plan(ctx, todo, filed(ctx), st.routes)
    st.pending.update(p.pending)
    st.to_home += p.to_home
    st.to_project += p.to_project
    st.elsewhere |= p.elsewhere
    appended = 0
    for addr in sorted(p.groups, key=str):
        batch = p.groups[addr]
        try:
            results = ctx.store.append(addr, [lt.raw for lt in batch])
        except StoreError:  # readable but not writable here (doctor, which never writes, cannot foresee it)
            for lt in batch:
                st.pending[lt.id] = (lt, Route(addr, addr.name or str(addr), "unreachable"))
            continue
        appended += sum(1 for _, new in results if new)
        if addr.kind == "home":
            st.to_home += len(batch)
        else:
            st.to_project += len(batch)
    _moved(ctx, st)  # the boxes as this run leaves them (one it created included) are the next run's start
    return _summary(st.done, appended, st)


def pending_detail(pending: Iterable[tuple[Letter, Route]]) -> list[dict[str, object]]:
    """``[{name, reason, letters}]`` sorted by name: what waits, and why."""
    detail: dict[str, dict[str, object]] = {}
    for _, r in pending:
        d = detail.setdefault(r.name, {"name": r.name, "reason": r.reason, "letters": 0})
        d["letters"] = int(d["letters"]) + 1  # type: ignore[call-overload]
    return [detail[n] for n in sorted(detail)]


def _summary(total: int, appended: int, st: DistributionState) -> Distribution:
    detail = pending_detail(st.pending.values())
    return Distribution(
        spool_total=total,
        appended=appended,
        to_project=st.to_project,
        to_home=st.to_home,
        pending=[str(d["name"]) for d in detail],
        pending_detail=detail,
        elsewhere=sorted(st.elsewhere),
    )
