"""A verb command's options, made from its verb: one definition of each default, help and vocabulary.

A command parameter that is a field of its verb is written
``priority: str = option(Message, "priority", "--priority")``: the parameter's
default is the field's default (``msgspec.structs.fields``), its help the field's
doc (``verbs.doc``) and, for a closed vocabulary, its metavar the field's choices.
So no command restates a verb's default, and a changed default changes the CLI
with the MCP and REST faces. ``tests/cli/test_options.py`` fails on a literal
default in a command module; ``tests/handle/test_verb_drift.py`` holds each
command to its verb. Options of the face alone (``--json``, ``--limit``) are
written in ``common``. ``default`` serves the ``inbox`` fast path (``cli.quick``)
too, which runs before Typer is imported: so this module imports Typer only
when it makes an option.
"""

from __future__ import annotations

import enum
import functools
from typing import Any, Optional

import msgspec

from dovecote.verbs import Verb, choices, doc


def one_of(verb: type[Verb], field: str) -> str:
    """The metavar of an option that takes a closed vocabulary: ``[a|b|c]``.

    Such an option takes text and the verb decodes it, so a value outside the
    vocabulary is refused ``invalid_field`` (exit 2) exactly as over MCP.
    """
    return "[" + "|".join(choices(verb, field)) + "]"


def repeated(text: str, how: str) -> str:
    """The help of an option given once per value: the field's doc, and how to repeat it."""
    return f"{text.rstrip('.')} ({how})."


def default(verb: type[Verb], field: str, optional: bool = False) -> Any:
    """The parameter default of ``verb``'s ``field``: ``...`` (required) when the field is required.

    ``optional`` makes a required field optional on the command line (another
    option gives it, or the verb refuses ``missing_field`` without it). An enum
    default is its text (the option takes text; the verb decodes it), and an
    empty collection is None (Typer's "not given" for a repeated option).
    """
    f = _fields(verb).get(field)
    if f is None:
        raise KeyError(f"{verb.__name__} has no field {field!r}")
    if f.required:
        return None if optional else ...
    value = f.default_factory() if f.default is msgspec.NODEFAULT else f.default
    if isinstance(value, enum.Enum):
        return value.value
    return None if value in ((), [], {}) else value


@functools.cache
def _fields(verb: type[Verb]) -> dict[str, msgspec.structs.FieldInfo]:
    """``verb``'s fields by name, read once: ``msgspec.structs.fields`` resolves every type hint again."""
    return {f.name: f for f in msgspec.structs.fields(verb)}


def option(
    verb: type[Verb],
    field: str,
    *flags: str,
    help: Optional[str] = None,
    repeat: Optional[str] = None,
    metavar: Optional[str] = None,
    optional: bool = False,
) -> Any:
    """The ``typer.Option`` of ``verb``'s ``field``, to be a parameter's default.

    ``flags``: the field's flag first, then its hidden older spellings.
    ``repeat``: how a repeated option is given ("repeat"), added to the help.
    ``help``: the help when it says more than the field's doc.
    """
    text = help if help is not None else doc(verb, field)
    if repeat is not None:
        text = repeated(text, repeat)
    import typer

    shown = metavar if metavar is not None else one_of(verb, field) if choices(verb, field) else None
    return typer.Option(default(verb, field, optional), *flags, help=text, metavar=shown)


def argument(verb: type[Verb], field: str, metavar: Optional[str] = None) -> Any:
    """The ``typer.Argument`` of ``verb``'s ``field``, to be a parameter's default."""
    import typer

    return typer.Argument(default(verb, field), metavar=metavar, help=doc(verb, field))
