"""The moves a caller may make on an item in each lifecycle state, read from the lifecycle table.

Law: the table (``derive.lifecycle.TRANSITIONS``) is the one place that says which move leaves which
state; a face that offers moves (the Human View's buttons) asks here rather than spelling them again,
so a move the table drops disappears from every page with it. ``resurface`` is time's move, never a
caller's (``vocab.MoveKind`` leaves it out), so it is never offered.
"""

from __future__ import annotations

from dovecote.derive.lifecycle import TRANSITIONS
from dovecote.model.vocab import MoveKind

#: state -> the moves a caller may make from it, in the table's order (a terminal state: none).
MOVES: dict[str, tuple[str, ...]] = {
    str(state): tuple(str(kind) for kind in moves if str(kind) in set(MoveKind))
    for state, moves in TRANSITIONS.items()
}
