"""``python -m dovecote``: the same as the ``dovecote`` command."""

from dovecote.cli.entry import script

script()
