"""Field reports and the case views: ``report``, ``distribute``, ``sweep``, ``box``, ``doctor``, ``verify``.

Each option is a field of its verb (``dovecote.verbs``), and its help is that field's doc.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import orjson
import typer

from dovecote.cli import render
from dovecote.cli.boundary import Typer
from dovecote.cli.common import JsonOpt, LimitOpt, NoLimitOpt, opened
from dovecote.cli.listing import rows_shown
from dovecote.cli.options import argument, option
from dovecote.cli.output import EXIT_FAIL, emit_json_chunks, show
from dovecote.errors import Refusal
from dovecote.verbs import Box, Distribute, Doctor, Report, Sweep, Verify


def _read_objects(stream: Any) -> list[Any]:
    """One JSON value (an object, or an array of them, pretty-printed or not), else JSONL."""
    data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read().encode()
    text = data.strip()
    try:
        whole = orjson.loads(text)
    except orjson.JSONDecodeError:
        if text.startswith(b"["):
            raise Refusal("invalid_json", "stdin starts like a JSON array but is not valid JSON") from None
    else:
        return whole if isinstance(whole, list) else [whole]
    objs = []
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            objs.append(orjson.loads(line))
        except orjson.JSONDecodeError as e:
            raise Refusal("invalid_json", f"line {n} of stdin is not valid JSON: {e}") from None
    return objs


def report_cmd(
    tool: Optional[str] = option(Report, "tool", "--tool", optional=True),
    klass: Optional[str] = option(Report, "klass", "--class", optional=True),
    what: Optional[str] = option(Report, "what", "--what", optional=True),
    repo: Optional[str] = option(Report, "repo", "--repo"),
    brain: Optional[str] = option(Report, "brain", "--brain"),
    expected: Optional[str] = option(Report, "expected", "--expected"),
    snippet: Optional[str] = option(Report, "snippet", "--snippet"),
    symptom: Optional[str] = option(Report, "symptom", "--symptom"),
    misdelivery_kind: Optional[str] = option(Report, "misdelivery_kind", "--misdelivery-kind"),
    answers: Optional[list[str]] = option(Report, "answers", "--answers", metavar="ID",
                                          repeat="repeat, or comma-separated"),
    agent: Optional[str] = option(Report, "agent", "--agent"),
    json_in: Annotated[
        Optional[str], typer.Option("--json", help="'-' reads JSON objects (JSONL or an array) from stdin.")
    ] = None,
) -> None:
    """Append a field report to the spool and print its id.
    """
    fields: dict[str, Any] = {
        "tool": tool, "class": klass, "what": what, "repo": repo, "brain": brain,
        "expected": expected, "snippet": snippet, "symptom": symptom, "misdelivery_kind": misdelivery_kind,
        "answers": [a for chunk in answers or () for a in chunk.replace(",", " ").split()] or None,
    }
    given = {k: v for k, v in fields.items() if v is not None}
    if json_in is not None:
        if json_in != "-":
            raise Refusal("invalid_field", "--json takes '-' (read from stdin)")
        if given:
            flags = ", ".join(f"--{k.replace('_', '-')}" for k in given)
            raise Refusal("invalid_field", f"--json - reads every field from stdin; drop {flags}")
        objs: list[Any] = _read_objects(sys.stdin)
    else:
        objs = [given]  # an author named by --agent is the acting agent's: it writes every report it files
    for lid, appended in opened().report(objs, actor=agent):
        print(lid if appended else f"{lid} (already present)")


def distribute_cmd(json: JsonOpt = False) -> None:
    """File every spool letter into exactly one box.

    Each letter goes where the ownership law says; a re-run appends 0."""
    show(opened().distribute(Distribute()), json=json, text=render.receipt)


def sweep_cmd(
    distribute: bool = option(Sweep, "distribute", "--distribute/--no-distribute"),
    include_all: bool = option(Sweep, "include_all", "--include-all", "--all"),
    rows: LimitOpt = None,
    every: NoLimitOpt = False,
    json: JsonOpt = False,
) -> None:
    """Fates across the spool and every reachable box.

    Each letter is counted once, wherever it is; every unreachable box is named.

    It distributes the spool first (as `dovecote distribute` does, and says so);
    --no-distribute only reads. The text lists the oldest letters (--limit, --no-limit).
    """
    import gc

    was = gc.isenabled()
    gc.disable()  # the whole command builds objects it never frees: a collection would only walk them
    try:
        dc = opened()
        v = Sweep(distribute=distribute, include_all=include_all)
        if json or not sys.stderr.isatty():
            result = dc.sweep(v)
        else:
            result = render.with_progress(lambda progress: dc.sweep(v, progress=progress))
        if json:  # streamed: a sweep's rows are serialized a batch at a time
            emit_json_chunks(result.json_chunks())
        else:
            render.sweep(result.to_dict(), rows_shown(rows, every))
    finally:  # an in-process caller (a test, an embedding) gets its collector back as it was
        if was:
            gc.enable()


def box_cmd(
    address: str = argument(Box, "address"),
    include_all: bool = option(Box, "include_all", "--include-all", "--all"),
    rows: LimitOpt = None,
    every: NoLimitOpt = False,
    json: JsonOpt = False,
) -> None:
    """Read one box only (a box that does not exist reads zero).

    The text lists the oldest letters (--limit, --no-limit).
    """
    result = opened().box(Box(address=address, include_all=include_all))
    show(result, json=json, text=lambda d: render.box(d, rows_shown(rows, every)))


def doctor_cmd(json: JsonOpt = False) -> None:
    """The mailbox block: counts only, failing open.

    Counts only; an I/O error marks the block unavailable instead of failing."""
    show(opened().doctor(Doctor()), json=json, text=render.doctor)


def verify_cmd(json: JsonOpt = False) -> None:
    """Rebuild every cache and prove every read unchanged.

    It deletes and rebuilds every cache; exit 1 unless every read is byte-identical."""
    result = opened().verify(Verify())
    show(result, json=json, text=render.verify)
    if not result.ok:
        raise typer.Exit(EXIT_FAIL)


def register(app: Typer) -> None:
    app.command("report")(report_cmd)
    app.command("distribute")(distribute_cmd)
    app.command("sweep")(sweep_cmd)
    app.command("box")(box_cmd)
    app.command("doctor")(doctor_cmd)
    app.command("verify")(verify_cmd)
