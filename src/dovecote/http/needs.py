"""What waits on a person, read as a remote caller reads it: ``GET /api/v1/needs``, the ``/needs`` page,
the overview's first card and the title count all make this one call.

Law: the list is computed once, in ``ops.delivery.needs`` (through ``Dovecote.needs``); here the request's
principal is turned into what that read may cover, by the one rule (``remote``): the entity boxes it may read
(``remote.may`` of ``inbox``: an agent token its own box, an operator, the local reader and the signed-in
person every box), and the intake's quarantine only for whom the operator's read admits
(``remote.operator_read``). Missions and cases are open reads, so their needs show to every reader.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dovecote.errors import Refusal
from dovecote.handle import remote
from dovecote.handle.api import Dovecote, Principal


class NeedsParams(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """``GET /needs`` takes no parameter (a parameter it does not declare is refused)."""


def needs(dc: Dovecote, who: Principal | None, _: object = None) -> Any:
    """The ``Needs`` the principal ``who`` may read (see the module docstring)."""
    try:
        remote.operator_read(who, "read the intake's quarantine")
        everything = True
    except Refusal:
        everything = False
    return dc.needs(lambda entity_id: remote.may(who, "inbox", entity_id), everything=everything)
