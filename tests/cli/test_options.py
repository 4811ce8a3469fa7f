"""``cli.options``: a verb command's option is made from the verb's field, so the two cannot differ.

The help a user reads and the value a command passes when an option is not given
are the verb's own: the same default MCP and REST apply, never a copy.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.models import ArgumentInfo, OptionInfo

from dovecote.cli.options import argument, default, option
from dovecote.verbs import ACK_TIMEOUT_S, Inbox, Message, Report, Send, Sweep, doc


def test_an_enum_option_defaults_to_the_fields_text_with_its_vocabulary_as_metavar() -> None:
    o = option(Message, "priority", "--priority")
    assert isinstance(o, OptionInfo)
    assert (o.default, o.param_decls, o.metavar, o.help) == (
        "normal", ("--priority",), "[urgent|high|normal|low]", doc(Message, "priority"))


def test_a_number_default_is_the_verbs_constant() -> None:
    assert option(Send, "ack_timeout", "--ack-timeout").default == ACK_TIMEOUT_S
    assert default(Sweep, "distribute") is True


def test_a_required_field_is_a_required_option_unless_another_option_gives_it() -> None:
    assert option(Message, "recipient", "--recipient", "--to").default is ...
    assert option(Report, "tool", "--tool", optional=True).default is None


def test_a_repeated_option_starts_empty_and_says_how_to_repeat() -> None:
    o = option(Send, "constraints", "--constraint", repeat="repeat")
    assert o.default is None
    assert o.help == doc(Send, "constraints").rstrip(".") + " (repeat)."


def test_an_argument_is_made_the_same_way() -> None:
    a = argument(Inbox, "entity_id", metavar="ENTITY")
    assert isinstance(a, ArgumentInfo) and (a.default, a.metavar, a.help) == (None, "ENTITY", doc(Inbox, "entity_id"))


def test_a_field_the_verb_does_not_have_is_an_error_at_import() -> None:
    with pytest.raises(KeyError, match="nope"):
        default(Message, "nope")


def test_reading_a_default_loads_no_typer() -> None:
    """The inbox fast path reads the Inbox verb's defaults here before Typer is imported."""
    code = ("import sys; from dovecote.cli.options import default; from dovecote.verbs import Inbox; "
            "print(default(Inbox, 'direction'), 'typer' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "inbound False\n"
