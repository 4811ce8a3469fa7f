"""The ``inbox`` command without Typer or Rich: the hot path of every session-start hook.

Typer and Rich cost more to import than a warm inbox costs to answer, and a
hook runs ``dovecote inbox ENTITY --format injection`` in every new session.
So ``try_quick`` parses the command's simple argv itself (the options the
command documents, in any order, ``--opt value`` or ``--opt=value``) and runs
the very function the Typer command runs (``run_inbox``), so both print the
same bytes and refuse the same way. Anything it does not recognise (``--help``,
a misspelt option, a malformed number) is left to Typer, which owns usage
errors and help. Both read through ``dovecote.handle.inbox``, the handle's
inbox reads without the rest of the handle (``dovecote.handle.api`` loads every use
case; the hook needs one).

A quick call runs with the cyclic collector paused: it allocates tens of
thousands of objects (the fold snapshot, the rows), frees none of them before
it exits, and each collection would only walk them again.
"""

from __future__ import annotations

import gc
import os
import re
import sys

from dovecote.cli.actor import bound_actor
from dovecote.cli.options import default
from dovecote.cli.utf8 import ENV_TEXT, is_utf8
from dovecote.errors import Refusal
from dovecote.handle import inbox as inboxhandle
from dovecote.verbs import MAX_INT, Direction, Inbox

FORMATS = ("text", "json", "injection")
_INT = re.compile(r"[+-]?[0-9]+")
_DIGITS = re.compile(r"[0-9]{1,18}")  # a --limit: short enough to read as a number
_FLAGS = {"--include-terminal": ("all_", True), "--all": ("all_", True), "--json": ("json", True),
          "--detailed": ("detailed", True), "--compact": ("detailed", False), "--no-limit": ("every", True)}
_VALUED = ("--format", "--current-tic", "--direction", "--limit")


def run_inbox(
    home: str | None, words: list[str], fmt: str, current: int | None, direction: str, detailed: bool,
    all_: bool, json: bool, rows: int | None = None, every: bool = False,
) -> None:
    """Audit an entity's inbox and print it (the body of ``dovecote inbox``, for both parsers)."""
    from dovecote.cli import output_cache

    if json and fmt == "injection":
        raise Refusal("invalid_field", "--json is --format json; drop --format injection")
    fmt = "json" if json else fmt
    words = list(words)
    status_only = bool(words) and words[-1] == "status"
    if status_only:
        words.pop()
    if len(words) > 1:
        raise Refusal("invalid_field", f"unexpected arguments: {' '.join(words[1:])}")
    ctx = inboxhandle.open_context(home, actor=bound_actor())
    who = words[0] if words else inboxhandle.default_entity(ctx)
    from dovecote.verbs import decode

    # decoded first: the name is checked (invalid_name) before it becomes a path to stat (a NUL raised there)
    verb = decode(Inbox, {"entity_id": who, "current_tic": current, "direction": direction, "include_terminal": all_})
    deps = output_cache.snapshot(inboxhandle.dependencies(ctx, who))  # stat before reading: never newer than the read
    if fmt == "injection":  # the hook's path: the block alone, no view built
        text, until = inboxhandle.injection_until(ctx, verb)
        out = text.encode()
    else:
        typed, until = inboxhandle.inbox_until(ctx, verb)
        view = typed.to_dict()
        if fmt == "json":
            import orjson  # not on the hook's path: it pulls in dataclasses, json and uuid

            out = orjson.dumps(view, option=orjson.OPT_INDENT_2) + b"\n"
        else:
            from dovecote.cli.listing import rows_shown
            from dovecote.cli.texts import inbox_text

            limit = rows_shown(rows, every)
            out = inbox_text(view, detailed=detailed, status_only=status_only, limit=limit).encode()
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    box = inboxhandle.probe(ctx, who)  # the box as the read left it
    if box is not None:
        output_cache.remember(sys.argv[1:], out, deps, [box], until.timestamp() if until else None)
    inboxhandle.keep_roster(ctx)  # the next cold call reads it without tomllib


def parse(argv: list[str]) -> dict[str, object] | None:
    """The arguments of a simple ``[--home H] inbox ...`` call, or None (Typer decides:
    help, usage errors, and the input boundary's refusals are its own)."""
    if not all(map(is_utf8, argv)) or not all(is_utf8(os.environ.get(k, "")) for k in ENV_TEXT):
        return None
    home: str | None = None
    rest = list(argv)
    if rest[:1] == ["--home"] and len(rest) >= 2:
        home, rest = rest[1], rest[2:]
    elif rest[:1] and rest[0].startswith("--home="):
        home, rest = rest[0].split("=", 1)[1], rest[1:]
    if rest[:1] != ["inbox"]:
        return None
    got: dict[str, object] = {"home": home, "words": [], "fmt": "text", "current": default(Inbox, "current_tic"),
                              "direction": default(Inbox, "direction"), "detailed": False,
                              "all_": default(Inbox, "include_terminal"), "json": False, "rows": None, "every": False}
    words: list[str] = []
    args = iter(rest[1:])
    for arg in args:
        if arg in _FLAGS:
            key, flag = _FLAGS[arg]
            got[key] = flag
            continue
        name, eq, value = arg.partition("=")
        if name in _VALUED:
            if not eq:
                value = next(args, "")
            if name == "--format" and value in FORMATS:
                got["fmt"] = value
            elif name == "--direction" and value in list(Direction):
                got["direction"] = value
            elif name == "--current-tic" and _INT.fullmatch(value) and abs(int(value)) <= MAX_INT:
                got["current"] = int(value)
            elif name == "--limit" and _DIGITS.fullmatch(value) and 1 <= int(value) <= MAX_INT:
                got["rows"] = int(value)
            else:
                return None
            continue
        if arg.startswith("-"):
            return None
        words.append(arg)
    got["words"] = words
    return got


def try_quick(argv: list[str]) -> bool:
    """Run a simple ``inbox`` call here; False when Typer must parse it."""
    got = parse(argv)
    if got is None:
        return False
    was = gc.isenabled()
    gc.disable()  # see the module docstring
    try:
        run_inbox(**got)  # type: ignore[arg-type]
    finally:
        if was:
            gc.enable()
    return True
