"""The mission chain fold: heads, chains and the landing count, over a box's letters.

Pure (DESIGN 4): it is fed letters and never opens a file. A mission is a hash
chain of ``kind: mission`` letters: seq 1 names no ``prev_letter_id``, each
later letter names the head it follows. The fold follows m1nd's rule, so a box
m1nd wrote (unlocked, so possibly forked) reads the same in both tools:

* root: the first letter of the mission with no ``prev_letter_id`` (none: the
  one with the highest seq);
* head: from the root, follow the first letter (in ledger order) whose
  ``prev_letter_id`` is the current one, until none does;
* ``superseded_count``: the mission's letters minus one (every letter but the head).

Mission lines are read as they are (m1nd's and dovecote's): a line whose
``mission`` object lacks an id is not part of any chain. Mission letters are
never field reports (``kind`` is set), so no sweep or fate counts them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dovecote.derive.missions.letter import MISSION_KIND, Phase
from dovecote.model.letters import Letter


@dataclass(frozen=True, slots=True)
class Entry:
    """One mission letter as the fold reads it: its id, the line's envelope and its mission object."""

    id: str
    agent: str | None
    ts: str | None
    mission: dict[str, Any]

    @property
    def mission_id(self) -> str:
        return str(self.mission.get("mission_id"))

    @property
    def seq(self) -> int:
        s = self.mission.get("mission_seq")
        return s if isinstance(s, int) and not isinstance(s, bool) else 0

    @property
    def prev(self) -> str | None:
        p = self.mission.get("prev_letter_id")
        return p if isinstance(p, str) else None

    @property
    def phase(self) -> str:
        return str(self.mission.get("phase"))

    def row(self) -> dict[str, Any]:
        """The letter as a face shows it."""
        return {"letter_id": self.id, "mission_seq": self.seq, "phase": self.phase, "prev_letter_id": self.prev,
                "agent": self.agent, "ts": self.ts, "mission": self.mission}


def entry_of(letter: Letter) -> Entry | None:
    """The mission entry of ``letter``, or None when it is no mission letter (or names no mission)."""
    if letter.kind != MISSION_KIND:
        return None
    d = letter.data()
    m = d.get("mission")
    if not isinstance(m, dict) or not isinstance(m.get("mission_id"), str):
        return None
    return Entry(letter.id, letter.agent, letter.ts, m)


def head_phase(e: Entry | None) -> Phase | None:
    """The head's phase as the phase graph knows it (None: no chain yet, or a phase it does not know)."""
    if e is None:
        return None
    return Phase(e.phase) if e.phase in Phase.__members__ else None


@dataclass(slots=True)
class Mission:
    """The letters of one mission, in ledger order; its chain and head are derived from them."""

    mission_id: str
    entries: list[Entry] = field(default_factory=list)

    def chain(self) -> list[Entry]:
        """Root to head, following m1nd's rule (see the module docstring)."""
        if not self.entries:
            return []
        root = next((e for e in self.entries if e.prev is None), None)
        if root is None:
            root = max(self.entries, key=lambda e: e.seq)
        after: dict[str, list[Entry]] = {}  # prev id -> the letters naming it, in ledger order
        for e in self.entries:
            if e.prev is not None:
                after.setdefault(e.prev, []).append(e)
        out, seen = [root], {root.id}
        while True:
            nxt = next((e for e in after.get(out[-1].id, ()) if e.id not in seen), None)
            if nxt is None:
                return out
            out.append(nxt)
            seen.add(nxt.id)

    @property
    def head(self) -> Entry | None:
        c = self.chain()
        return c[-1] if c else None

    def head_row(self) -> dict[str, Any]:
        h = self.head
        assert h is not None
        return {
            "mission_id": self.mission_id, "head_letter_id": h.id, "phase": h.phase, "mission_seq": h.seq,
            "superseded_count": len(self.entries) - 1, "block_id": h.mission.get("block_id"),
            "brain_ref": h.mission.get("brain_ref"), "updated_at": h.mission.get("updated_at"),
        }

    def forks(self) -> list[str]:
        """The ids of the letters off the chain (a fork m1nd's unlocked posts could make)."""
        on = {e.id for e in self.chain()}
        return [e.id for e in self.entries if e.id not in on]


def fold(letters: Iterable[Letter]) -> dict[str, Mission]:
    """Every mission among ``letters``, by id, in the order each first appears."""
    out: dict[str, Mission] = {}
    for lt in letters:
        e = entry_of(lt)
        if e is not None:
            out.setdefault(e.mission_id, Mission(e.mission_id)).entries.append(e)
    return out


def one(letters: Iterable[Letter], mission_id: str) -> Mission:
    """The mission ``mission_id`` among ``letters`` (empty when it has no letter there)."""
    m = Mission(mission_id)
    needle = mission_id.encode()  # a letter of it holds its id's bytes: the others are never parsed
    for lt in letters:
        if lt.kind == MISSION_KIND and needle in lt.raw:
            e = entry_of(lt)
            if e is not None and e.mission_id == mission_id:
                m.entries.append(e)
    return m


def summary(heads: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts a face shows over heads: by phase, and how many wait to land (merge_wait heads)."""
    by_phase = {p.value: 0 for p in Phase}
    for h in heads:
        by_phase[h["phase"]] = by_phase.get(h["phase"], 0) + 1
    return {"count": len(heads), "landing": by_phase[Phase.merge_wait.value], "by_phase": by_phase}
