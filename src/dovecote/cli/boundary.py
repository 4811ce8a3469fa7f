"""The CLI's input boundary and help style, shared by every command.

Every command is built from the classes here (``Typer`` below makes them the
default), so a command added later is checked and rendered the same way
without remembering to opt in:

- **Input.** Python decodes argv and the environment with ``surrogateescape``,
  so bytes that are not UTF-8 arrive as lone surrogates; they cannot be
  written to a ledger or printed, and used to crash deep inside a command.
  Integers are unbounded in Python but not in JSON readers or SQLite. Both are
  refused here, before the command runs, as ``invalid_field`` (exit 2).
- **Help.** Typer names value types as ``<str>`` / ``<list[str]>``; the help
  shows the conventional ``TEXT``, ``INTEGER``, ``PATH`` or ``[a|b]`` instead.
"""

from __future__ import annotations

import os
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand, TyperGroup

from dovecote.cli.quick import ENV_TEXT, MAX_INT, is_utf8  # the rules live there: the quick parser checks them too
from dovecote.errors import Refusal

if TYPE_CHECKING:  # the click typer runs on (vendored as typer._click since typer 0.2x)
    from collections.abc import Callable

    from typer._click import Context, HelpFormatter
    from typer.models import CommandFunctionType



def check_value(label: str, value: object) -> None:
    """Refuse a parsed argument that no ledger, JSON reader or terminal can carry."""
    if isinstance(value, (list, tuple)):
        for v in value:
            check_value(label, v)
    elif isinstance(value, int) and not isinstance(value, bool):
        if not -MAX_INT <= value <= MAX_INT:
            raise Refusal("invalid_field", f"{label} {value} is out of range (at most {MAX_INT} in size)")
    elif isinstance(value, (str, PurePath)) and not is_utf8(str(value)):
        raise Refusal("invalid_field", f"{label} is not valid UTF-8 text")


def check_environment() -> None:
    for key in ENV_TEXT:
        value = os.environ.get(key)
        if value is not None and not is_utf8(value):
            raise Refusal("invalid_field", f"${key} is not valid UTF-8 text")


def _label(param: Any) -> str:
    return str(param.opts[0] if param.param_type_name == "option" else (param.metavar or param.name.upper()))


def check_params(ctx: Context) -> None:
    for param in ctx.command.params:
        check_value(_label(param), ctx.params.get(param.name))


def _metavar(param: Any) -> str | None:
    """The conventional name of an option's value (what click itself prints).

    None on a typer that has no type descriptors: its click already prints these.
    """
    desc = getattr(param, "type_descriptor", None)
    if desc is None:
        return None
    if desc.is_choice:
        return "[" + "|".join(str(getattr(c, "value", c)) for c in desc.choices or ()) + "]"
    if desc.is_path:
        return "PATH"
    return "INTEGER" if "int" in param.bare_type() else "TEXT"


def _plain_metavars(params: list[Any]) -> None:
    for p in params:
        if p.param_type_name == "option" and p.metavar is None and not getattr(p, "is_flag", False):
            p.metavar = _metavar(p)


class Command(TyperCommand):
    """A command whose input is checked at the boundary and whose help names no Python types."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_metavars(self.params)

    def invoke(self, ctx: Context) -> Any:
        check_params(ctx)
        return super().invoke(ctx)

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        args, opts = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                name = param.metavar or (param.name.upper() + ("..." if param.nargs != 1 else ""))
                args.append((name, record[1]))
            else:
                opts.append(record)
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


class Group(TyperGroup):
    """A command group with the same input checks (its own options, and the environment)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_metavars(self.params)

    def invoke(self, ctx: Context) -> Any:
        check_environment()
        check_params(ctx)
        return super().invoke(ctx)


class Typer(typer.Typer):
    """``typer.Typer`` whose groups and commands are the checked classes above by default."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", Group)
        super().__init__(**kwargs)

    def command(
        self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any
    ) -> Callable[[CommandFunctionType], CommandFunctionType]:
        return super().command(name, cls=cls or Command, **kwargs)
