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
- **Aliases.** An option's first flag is its name (the verb field's, see
  ``dovecote.verbs``); any further flags are old spellings kept working and
  left out of the help (``--trust`` for ``--trust-level``).
- **Panels and examples.** A group lists its commands in the panels of
  ``panels`` (each command's ``rich_help_panel``), and every command's help
  ends with its runnable example (``examples``).
- **Stray words.** A word no command expects (a stray positional, an unknown
  subcommand) is a usage error (exit 2) that names the command it was given to
  and what that command takes, with the keyword ``invalid_field`` as every
  refusal of input at this boundary.
"""

from __future__ import annotations

import copy
import difflib
import os
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import typer
from typer._click.exceptions import UsageError
from typer.core import TyperCommand, TyperGroup

from dovecote.cli.utf8 import ENV_TEXT, is_utf8
from dovecote.errors import Refusal
from dovecote.verbs import MAX_INT

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


def _without_aliases(param: Any) -> Any:
    """The option as its help shows it: its first flag only (the rest are hidden old spellings)."""
    if param.param_type_name != "option" or len(param.opts) < 2:
        return param
    shown = copy.copy(param)
    shown.opts = param.opts[:1]
    return shown


def _path(ctx: Context) -> tuple[str, ...]:
    """The command's words under the program (``("mission", "post")``; the program itself is ``()``)."""
    words: list[str] = []
    while ctx.parent is not None:
        words.append(str(ctx.info_name))
        ctx = ctx.parent
    return tuple(reversed(words))


def _format_example(ctx: Context, formatter: HelpFormatter) -> None:
    """The help's last lines: the command's example(s), printed as they run (never rewrapped)."""
    from dovecote.cli.examples import EXAMPLES

    lines = EXAMPLES.get(" ".join(_path(ctx)), ())
    if lines:
        formatter.write_paragraph()
        formatter.write("Example:\n" if len(lines) == 1 else "Examples:\n")
        for line in lines:
            formatter.write(f"  {line}\n")


def _stray(ctx: Context, word: str, takes: str, hint: str = "") -> UsageError:
    """The usage error of a word the command does not expect: where it was given, what was expected."""
    where = " ".join((ctx.find_root().info_name or "dovecote", *_path(ctx)))
    return UsageError(f"invalid_field: {where}: unexpected argument {word!r}; {takes}{hint}", ctx)


class Command(TyperCommand):
    """A command whose input is checked at the boundary and whose help names no Python types."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_metavars(self.params)

    def invoke(self, ctx: Context) -> Any:
        check_params(ctx)
        return super().invoke(ctx)

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        """Click's parse, with a word left over named with what this command takes instead of click's
        bare "Got unexpected extra argument"."""
        allowed = ctx.allow_extra_args
        ctx.allow_extra_args = True
        try:
            rest = super().parse_args(ctx, args)
        finally:
            ctx.allow_extra_args = allowed
        if rest and not allowed and not ctx.resilient_parsing:
            pieces = [p for p in self.collect_usage_pieces(ctx) if p != "[OPTIONS]"]
            takes = f"{ctx.info_name} takes " + (" ".join(pieces) + " and options" if pieces else "options only")
            raise _stray(ctx, rest[0], takes)
        return rest

    def format_epilog(self, ctx: Context, formatter: HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        _format_example(ctx, formatter)

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        args, opts = [], []
        for param in self.get_params(ctx):
            record = _without_aliases(param).get_help_record(ctx)
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

    def resolve_command(self, ctx: Context, args: list[str]) -> Any:
        """A word that names no subcommand is refused naming this group and its subcommands."""
        word = args[0] if args else ""
        if word and not word.startswith("-") and self.get_command(ctx, word) is None and not ctx.resilient_parsing:
            names = self.list_commands(ctx)
            if ctx.parent is None:  # the program: its commands are too many to list on one line
                takes = "expected a command (`dovecote --help` lists them by panel)"
            else:
                own = "options or a subcommand" if self.invoke_without_command else "a subcommand"
                takes = f"{ctx.info_name} takes {own} ({'subcommands: ' + ', '.join(names)})"
            close = difflib.get_close_matches(word, names, n=1)
            raise _stray(ctx, word, takes, f"; did you mean {close[0]!r}?" if close else "")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        """The commands in their panels (``panels``), each summary whole: one name column for every panel."""
        from dovecote.cli.panels import order

        listed = [(name, cmd) for name in self.list_commands(ctx)
                  if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden]
        if not listed:
            return
        width = max(len(name) for name, _ in listed)
        limit = formatter.width - 6 - width
        panels: dict[str, list[tuple[str, str]]] = {}
        for name, cmd in sorted(listed, key=lambda nc: order(_panel(nc[1]), nc[0])):
            panels.setdefault(_panel(cmd), []).append((name.ljust(width), cmd.get_short_help_str(limit)))
        for title, rows in panels.items():
            with formatter.section(title):
                formatter.write_dl(rows)

    def format_epilog(self, ctx: Context, formatter: HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        _format_example(ctx, formatter)


def _panel(cmd: Any) -> str:
    return str(getattr(cmd, "rich_help_panel", None) or "Commands")


class Typer(typer.Typer):
    """``typer.Typer`` whose groups and commands are the checked classes above by default."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", Group)
        super().__init__(**kwargs)

    def command(
        self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any
    ) -> Callable[[CommandFunctionType], CommandFunctionType]:
        return super().command(name, cls=cls or Command, **kwargs)
