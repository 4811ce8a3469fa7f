"""The verb of importing a vNext mailbox directory: ``import vnext PATH [--write]``."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from dovecote.verbs.base import Verb
from dovecote.verbs.limits import PathText


class ImportVnext(Verb, frozen=True):
    """Read a vNext mailbox directory; with write, import its envelopes, acks and tracker history as letters."""

    path: Annotated[
        PathText, Meta(min_length=1, description="The vNext mailbox root folder.")
    ]
    write: Annotated[
        bool, Meta(description="Append the letters (default: a dry run).")
    ] = False
