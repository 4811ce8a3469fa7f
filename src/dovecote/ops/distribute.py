"""``distribute``: file every spool letter into exactly one box.

The spool is read-only here (MED-INV-9). Each letter is routed by the ownership
law (``routing.route``); a letter whose project box is out of reach on this
machine stays pending with reason ``unreachable`` and its box is named, but the
decision itself is the same everywhere. Appends deduplicate by id, so a re-run
appends 0.

A warm ``Dovecote`` remembers how far into the spool it has filed and which
letters are still pending, so a re-run routes only new letters and retries the
pending ones. The memory is dropped whenever the roster, the spool or any box
file was replaced, and then everything is filed again (appending 0 for what is
already there).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dovecote.errors import StoreError
from dovecote.letters import Letter
from dovecote.names import Address
from dovecote.routing import Route, route

if TYPE_CHECKING:
    from dovecote.api import Dovecote


@dataclass
class Receipt:
    """What one distribution run did, counted honestly.

    ``to_project`` and ``to_home`` count every spool letter routed there
    (including ones already filed by an earlier run); ``appended`` counts only
    lines written by this run.
    """

    spool_total: int
    appended: int
    to_project: int
    to_home: int
    pending: list[str]
    pending_detail: list[dict[str, object]]

    def to_dict(self) -> dict[str, object]:
        return {
            "spool_total": self.spool_total,
            "appended": self.appended,
            "to_project": self.to_project,
            "to_home": self.to_home,
            "pending": self.pending,
            "pending_detail": self.pending_detail,
        }


@dataclass
class DistributionState:
    """What a warm handle remembers between runs."""

    key: tuple[object, ...] = ()
    done: int = 0
    to_project: int = 0
    to_home: int = 0
    pending: dict[str, tuple[Letter, Route]] = field(default_factory=dict)
    routes: dict[tuple[str | None, str | None], Route] = field(default_factory=dict)


def _state_key(dc: Dovecote) -> tuple[object, ...]:
    gens = [dc.store.read("spool").generation]
    for addr in dc.report_boxes():
        try:
            gens.append(dc.store.read(addr).generation)
        except StoreError:  # unreadable here; the append below will say so and keep its letters pending
            gens.append(-1)
    return (dc.roster.signature, tuple(gens))


def distribute(dc: Dovecote) -> Receipt:
    st: DistributionState = dc.warm.setdefault("distribution", DistributionState())
    spool = dc.store.read("spool").letters
    key = _state_key(dc)
    if key != st.key:
        st = dc.warm["distribution"] = DistributionState()
    todo = [(lt, None) for lt, _ in st.pending.values()]
    st.pending.clear()
    todo += [(lt, None) for lt in spool[st.done :]]
    st.done = len(spool)
    groups: dict[Address, list[tuple[Letter, Route]]] = defaultdict(list)
    reachable: dict[Address, bool] = {}
    for letter, _ in todo:
        if not letter.is_report:
            continue
        rk = (letter.brain, letter.repo)
        r = st.routes.get(rk)
        if r is None:
            r = st.routes[rk] = route(letter.brain, letter.repo, dc.index)
        if r.address is None:
            st.pending[letter.id] = (letter, r)
            continue
        ok = reachable.get(r.address)
        if ok is None:
            ok = reachable[r.address] = dc.store.reachable(r.address)
        if not ok:
            st.pending[letter.id] = (letter, Route(r.address, r.name, "unreachable"))
            continue
        groups[r.address].append((letter, r))
    appended = 0
    for addr in sorted(groups, key=str):
        batch = groups[addr]
        try:
            results = dc.store.append(addr, [lt.raw for lt, _ in batch])
        except StoreError:  # the box cannot be written here: its letters wait, named
            for lt, r in batch:
                st.pending[lt.id] = (lt, Route(r.address, r.name or str(addr), "unreachable"))
            continue
        appended += sum(1 for _, new in results if new)
        if addr.kind == "home":
            st.to_home += len(batch)
        else:
            st.to_project += len(batch)
    st.key = _state_key(dc)
    return _receipt(len(spool), appended, st)


def _receipt(total: int, appended: int, st: DistributionState) -> Receipt:
    detail: dict[str, dict[str, object]] = {}
    for _, r in st.pending.values():
        name = r.name
        d = detail.setdefault(name, {"name": name, "reason": r.reason, "letters": 0})
        d["letters"] = int(d["letters"]) + 1  # type: ignore[call-overload]
    names = sorted(detail)
    return Receipt(
        spool_total=total,
        appended=appended,
        to_project=st.to_project,
        to_home=st.to_home,
        pending=names,
        pending_detail=[detail[n] for n in names],
    )
