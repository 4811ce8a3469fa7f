"""The ``dovecote`` command line: parse arguments, call the library, print.

No rule lives here. Every command opens the home, makes one library call and
renders the answer (JSON with ``--json``, a Rich summary otherwise).
"""

from __future__ import annotations

import inspect
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import orjson
import typer

import dovecote
from dovecote.api import Dovecote, init, merge_ledgers, open_home
from dovecote.cli import render, texts
from dovecote.cli.boundary import Typer
from dovecote.cli.output import EXIT_FAIL, emit_json, emit_json_chunks, invocation
from dovecote.cli.quick import bound_actor
from dovecote.errors import Refusal
from dovecote.textsafe import one_line

if TYPE_CHECKING:
    from dovecote.api import Use

app = Typer(
    name="dovecote",
    help="A durable, file-first mailbox and case-intelligence system for agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
project_app = Typer(help="Edit and list the projects in the roster.", no_args_is_help=True)
app.add_typer(project_app, name="project")
entity_app = Typer(help="Edit and list the entities (mailbox owners) in the roster.", no_args_is_help=True)
app.add_typer(entity_app, name="entity")
outbox_app = Typer(help="Deliver outbound drafts.", no_args_is_help=True)
app.add_typer(outbox_app, name="outbox")

_home: dict[str, Optional[str]] = {"path": None}

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (stable, documented) instead of a summary.")]
AllOpt = Annotated[bool, typer.Option("--all", help="List every letter, not only the open ones.")]


def _open() -> Dovecote:
    return open_home(_home["path"], actor=bound_actor())


def _version(value: bool) -> None:
    if value:
        print(f"dovecote {dovecote.__version__}")
        raise typer.Exit()


@app.callback()
def main(
    home: Annotated[
        Optional[str],
        typer.Option("--home", help="The dovecote home (default: $DOVECOTE_HOME, nearest .dovecote/, ~/.dovecote)."),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """dovecote files every letter into exactly one box and derives its state at read time."""
    _home["path"] = home


@app.command("init")
def init_cmd(
    owner_root: Annotated[
        Optional[str], typer.Option("--owner-root", help="The owner's own root (projectless letters go home).")
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Create a dovecote home with a fresh config.toml (an existing one is kept).

    Example: dovecote --home ./.dovecote init
    """
    home, created = init(_home["path"], owner_root)
    if json:
        emit_json({"home": str(home), "created": created})
    else:
        print(f"{'created' if created else 'already a home:'} {home}")


@project_app.command("add")
def project_add(
    name: Annotated[str, typer.Argument(help="The project's name (its box is project:NAME).")],
    root: Annotated[str, typer.Option("--root", help="The project's root path.")],
    alias: Annotated[
        Optional[list[str]], typer.Option("--alias", metavar="NAME", help="Another name letters may use (repeat).")
    ] = None,
    box_in_repo: Annotated[
        bool, typer.Option("--box-in-repo", help="Keep the box in <root>/.dovecote/ so it travels with git.")
    ] = False,
    json: JsonOpt = False,
) -> None:
    """Add a project to the roster.

    Example: dovecote project add repo-a --root ~/code/repo-a --alias ra
    """
    p = _open().add_project(name, root, tuple(alias or ()), box_in_repo)
    out = {"name": p.name, "root": p.root, "aliases": list(p.aliases), "box_in_repo": p.box_in_repo}
    if json:
        emit_json(out)
    else:
        print(f"added project {p.name} at {p.root}")


@project_app.command("list")
def project_list(json: JsonOpt = False) -> None:
    """List the projects in the roster and whether their box is reachable here."""
    rows = _open().projects()
    if json:
        emit_json(rows)
    else:
        render.projects(rows)


ForceOpt = Annotated[
    bool, typer.Option("--force", help="Remove the entry even though letters still route there (the ledger stays).")
]


def _removed(use: Use, json: bool) -> None:
    kind, name = use.address.split(":", 1)  # the name as the roster spelled it
    if json:
        emit_json({"removed": kind, "name": name, **use.to_dict()})
    elif use.letters:
        print(f"removed {kind} {name}; its ledger stays at {use.ledger} ({use.in_box} letter(s), no longer read)")
    else:
        print(f"removed {kind} {name}")


@project_app.command("remove")
def project_remove(
    name: Annotated[str, typer.Argument(help="The project's name.")],
    force: ForceOpt = False,
    json: JsonOpt = False,
) -> None:
    """Remove a project from the roster; its ledger is never deleted.

    Refused (in_use) while its box holds letters or the spool has letters for it, unless --force.

    Example: dovecote project remove repo-a
    """
    _removed(_open().remove_project(name, force=force), json)


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


@app.command("report")
def report_cmd(
    tool: Annotated[Optional[str], typer.Option("--tool", help="What the report is about.")] = None,
    klass: Annotated[
        Optional[str],
        typer.Option("--class", help="friction, bug, triage, honesty, win or memory_misdelivery."),
    ] = None,
    what: Annotated[Optional[str], typer.Option("--what", help="What happened.")] = None,
    repo: Annotated[Optional[str], typer.Option("--repo", help="The project (name or path).")] = None,
    brain: Annotated[Optional[str], typer.Option("--brain", help="The project; beats --repo.")] = None,
    expected: Annotated[Optional[str], typer.Option("--expected", help="What was expected.")] = None,
    snippet: Annotated[Optional[str], typer.Option("--snippet", help="Evidence.")] = None,
    symptom: Annotated[Optional[str], typer.Option("--symptom", help="A symptom from the closed vocabulary.")] = None,
    misdelivery_kind: Annotated[
        Optional[str], typer.Option("--misdelivery-kind", help="Sub-kind of a memory_misdelivery.")
    ] = None,
    answers: Annotated[
        Optional[list[str]],
        typer.Option("--answers", metavar="ID", help="Ids this letter answers (repeat, or comma-separated)."),
    ] = None,
    agent: Annotated[
        Optional[str], typer.Option("--agent", help="The author (default $DOVECOTE_AGENT, $USER).")
    ] = None,
    json_in: Annotated[
        Optional[str], typer.Option("--json", help="'-' reads JSON objects (JSONL or an array) from stdin.")
    ] = None,
) -> None:
    """Append a field report to the spool and print its id.

    Example: dovecote report --tool seek --class bug --what "returned nothing" --repo repo-a
    """
    fields = {
        "tool": tool, "class": klass, "what": what, "repo": repo, "brain": brain,
        "expected": expected, "snippet": snippet, "symptom": symptom,
        "misdelivery_kind": misdelivery_kind,
        "answers": [a for chunk in answers or () for a in chunk.replace(",", " ").split()] or None,
    }
    given = {k: v for k, v in fields.items() if v is not None}
    if json_in is not None:
        if json_in != "-":
            raise Refusal("invalid_field", "--json takes '-' (read from stdin)")
        if given:
            flags = ", ".join(f"--{k.replace('_', '-')}" for k in given)
            raise Refusal("invalid_field", f"--json - reads every field from stdin; drop {flags}")
        objs = _read_objects(sys.stdin)
    else:
        objs = [given]
    for lid, appended in _open().report(objs, agent=agent):
        print(lid if appended else f"{lid} (already present)")


@app.command("distribute")
def distribute_cmd(json: JsonOpt = False) -> None:
    """File every spool letter into exactly one box (a re-run appends 0)."""
    receipt = _open().distribute()
    if json:
        emit_json(receipt.to_dict())
    else:
        render.receipt(receipt.to_dict())


@app.command("sweep")
def sweep_cmd(
    no_distribute: Annotated[bool, typer.Option("--no-distribute", help="Only read: no distribution first.")] = False,
    all_: AllOpt = False,
    json: JsonOpt = False,
) -> None:
    """Fates across the spool and every reachable box, each letter once.

    It distributes the spool first (as `dovecote distribute` does, and says so);
    --no-distribute only reads.
    """
    import gc

    gc.disable()  # the whole command builds objects it never frees: a collection would only walk them
    dc = _open()
    if json or not sys.stderr.isatty():
        result = dc.sweep(distribute=not no_distribute, include_all=all_)
    else:
        result = render.with_progress(
            lambda progress: dc.sweep(distribute=not no_distribute, include_all=all_, progress=progress)
        )
    if json:
        emit_json_chunks(result.json_chunks())
    else:
        render.sweep(result.to_dict())


@app.command("box")
def box_cmd(
    address: Annotated[str, typer.Argument(help="home, project:NAME or entity:ID.")],
    all_: AllOpt = False,
    json: JsonOpt = False,
) -> None:
    """Read one box only (a box that does not exist reads zero)."""
    view = _open().box(address, include_all=all_).to_dict()
    if json:
        emit_json(view)
    else:
        render.box(view)


@app.command("doctor")
def doctor_cmd(json: JsonOpt = False) -> None:
    """The mailbox block: counts only; an I/O error marks it unavailable."""
    out = _open().doctor()
    if json:
        emit_json(out)
    else:
        render.doctor(out)


@app.command("verify")
def verify_cmd(json: JsonOpt = False) -> None:
    """Delete and rebuild every cache; exit 1 unless every read is byte-identical."""
    result = _open().verify()
    if json:
        emit_json(result.to_dict())
    else:
        render.verify(result.to_dict())
    if not result.ok:
        raise typer.Exit(EXIT_FAIL)


@app.command("merge-driver")
def merge_driver_cmd(
    ancestor: Annotated[Path, typer.Argument(help="%O: the common ancestor.")],
    ours: Annotated[Path, typer.Argument(help="%A: ours; the union is written here.")],
    theirs: Annotated[Path, typer.Argument(help="%B: theirs.")],
    path: Annotated[Optional[str], typer.Argument(help="%P: the path in the tree (ignored).")] = None,
) -> None:
    """Git merge driver for ledgers: union by id, never a conflict, never a lost letter.

    Set up: git config merge.dovecote.driver "dovecote merge-driver %O %A %B"
    and in .gitattributes: letters.jsonl merge=dovecote
    """
    merge_ledgers(ancestor, ours, theirs)


@app.command("demo")
def demo_cmd(
    path: Annotated[Path, typer.Argument(help="Where to build the demo home.")] = Path("demo-home"),
) -> None:
    """Build a demo home (projects, letters of every fate, an entity inbox); print sweep, doctor, inbox."""
    from dovecote.cli.demo import build_demo, look_around
    from dovecote.cli.texts import inbox_injection, inbox_text

    home = build_demo(path, bound_actor())
    dc = open_home(home)
    c = render.con()
    c.print(f"[bold]demo home:[/bold] {home}\n")
    render.receipt(dc.distribute().to_dict())
    render.sweep(dc.sweep(distribute=False).to_dict())
    render.doctor(dc.doctor())
    inbox = dc.inbox("ent_builder", current=107, direction="both")
    c.print("\n[bold]entity mail[/bold] (at tic 107)")
    sys.stdout.write(inbox_text(inbox))
    sys.stdout.write(inbox_injection(inbox))
    sys.stdout.flush()
    first = inbox["items"][0]["id"] if inbox["items"] else "ID"
    c.print("\n" + look_around(home, first, invocation()), markup=False)


@entity_app.command("add")
def entity_add(
    entity_id: Annotated[str, typer.Argument(metavar="ID", help="The entity id (its box is entity:ID).")],
    role: Annotated[Optional[str], typer.Option("--role", help="The entity's role.")] = None,
    json: JsonOpt = False,
) -> None:
    """Register an entity, so it has a mailbox and can be sent to.

    Example: dovecote entity add ent_builder --role builder
    """
    e = _open().add_entity(entity_id, role)
    if json:
        emit_json({"id": e.id, "role": e.role})
    else:
        print(f"added entity {e.id}")


@entity_app.command("remove")
def entity_remove(
    entity_id: Annotated[str, typer.Argument(metavar="ID", help="The entity id.")],
    force: ForceOpt = False,
    json: JsonOpt = False,
) -> None:
    """Remove an entity from the roster; its ledger is never deleted.

    Refused (in_use) while its box holds letters, unless --force.

    Example: dovecote entity remove ent_builder
    """
    _removed(_open().remove_entity(entity_id, force=force), json)


@entity_app.command("list")
def entity_list(json: JsonOpt = False) -> None:
    """List the registered entities."""
    rows = _open().entities()
    if json:
        emit_json(rows)
    else:
        for r in rows:
            print(f"{r['id']}\t{r['role'] or ''}")


def _message_command(name: str, doc: str) -> None:
    """Register ``send`` or ``draft``: the same envelope options, another destination."""

    def command(
        to: Annotated[str, typer.Option("--to", help="The recipient entity.")],
        subject: Annotated[str, typer.Option("--subject", help="The subject line.")],
        body: Annotated[Optional[str], typer.Option("--body", help="The body text.")] = None,
        body_file: Annotated[Optional[Path], typer.Option("--body-file", help="Read the body from a file.")] = None,
        sender: Annotated[Optional[str], typer.Option("--from", help="The sender (default $DOVECOTE_ENTITY).")] = None,
        priority: Annotated[str, typer.Option("--priority", help="low, normal, high or urgent.")] = "normal",
        category: Annotated[
            str, typer.Option("--category", help="query, response, notification or directive.")
        ] = "notification",
        trust: Annotated[str, typer.Option("--trust", help="operator, peer, subordinate or visitor.")] = "peer",
        thread: Annotated[Optional[str], typer.Option("--thread", help="The thread id (replies inherit it).")] = None,
        reply_to: Annotated[
            Optional[str], typer.Option("--reply-to", help="The item this answers, or entity:<id> to answer to.")
        ] = None,
        expires_tic: Annotated[
            Optional[int], typer.Option("--expires-tic", help="Expiry (flagged, never enforced).")
        ] = None,
        defer_until_tic: Annotated[
            Optional[int], typer.Option("--defer-until-tic", help="Arrives DEFERred until this tic.")
        ] = None,
        reminder_tic: Annotated[
            Optional[int], typer.Option("--reminder-tic", help="Flag OVERDUE after this tic.")
        ] = None,
        artifact: Annotated[
            Optional[list[Path]], typer.Option("--artifact", metavar="PATH", help="Attach a file (repeat).")
        ] = None,
        response_expected: Annotated[
            Optional[bool],
            typer.Option("--response-expected/--no-response-expected", help="Default: yes for query and directive."),
        ] = None,
        current: Annotated[Optional[int], typer.Option("--current-tic", help="The tic now (source tic).")] = None,
        idempotency_key: Annotated[
            Optional[str],
            typer.Option("--idempotency-key", help="A retry with the same key is the same message, never a second."),
        ] = None,
        json: JsonOpt = False,
    ) -> None:
        fields: dict[str, Any] = {
            "to": to, "subject": subject, "body": body, "body_file": body_file, "sender": sender,
            "priority": priority, "category": category, "trust": trust, "thread": thread,
            "reply_to": reply_to, "expires_tic": expires_tic, "defer_until_tic": defer_until_tic,
            "reminder_tic": reminder_tic, "artifact_paths": artifact or [],
            "response_expected": response_expected, "current": current, "idempotency_key": idempotency_key,
        }
        dc = _open()
        result = dc.send(**fields) if name == "send" else dc.draft(**fields)
        if json:
            emit_json(result.to_dict())
        else:
            print(result.id if result.appended else f"{result.id} (already present: same idempotency key)")

    command.__doc__ = doc
    app.command(name)(command)


_message_command(
    "send",
    """Deliver a message to an entity's inbox and print its id.

    Every send is a new message (its own msg_<uuid7> message id), even when two are identical;
    with --idempotency-key a retry returns the message that key already delivered.

    Example: dovecote send --to ent_builder --from ent_ops --subject "rebuild" --category directive
    """,
)
_message_command(
    "draft",
    """Write an outbound draft (EMIT) into the sender's box; `outbox send` delivers it.""",
)


@outbox_app.command("send")
def outbox_send_cmd(
    sender: Annotated[Optional[str], typer.Option("--from", help="Only this entity's drafts.")] = None,
    json: JsonOpt = False,
) -> None:
    """Deliver every pending draft, verifying each recipient (a re-run never delivers one twice)."""
    out = _open().outbox_send(sender)
    if json:
        emit_json(out)
        return
    for r in out:
        if r["delivered"]:
            print(f"delivered {r['draft']} -> {one_line(r['to'])} as {r['message']}")
        else:
            print(f"kept {r['draft']}: {one_line(r['reason'])} ({one_line(r['to']) or 'no recipient'})")
    if not out:
        print("no drafts to send")


def _verb_options(
    entity_id: Annotated[str, typer.Argument(metavar="ENTITY", help="Whose inbox.")],
    item: Annotated[str, typer.Argument(metavar="ID", help="The item id (or a unique prefix).")],
    until_tic: Annotated[Optional[int], typer.Option("--until-tic", help="Defer until this tic.")] = None,
    until: Annotated[Optional[str], typer.Option("--until", help="Defer until this ISO-8601 time.")] = None,
    reason: Annotated[Optional[str], typer.Option("--reason", help="Why.")] = None,
    result_ref: Annotated[Optional[str], typer.Option("--result-ref", help="Where the result is.")] = None,
    current: Annotated[Optional[int], typer.Option("--current-tic", help="The tic now.")] = None,
    actor: Annotated[Optional[str], typer.Option("--actor", help="Who acts (default: the entity).")] = None,
    json: JsonOpt = False,
) -> None:
    """Every option a lifecycle verb may take; each verb's command shows only its own."""


_VERB_COMMON = ("entity_id", "item", "current", "actor", "json")


def _verb_command(verb: str, doc: str, own: tuple[str, ...]) -> None:
    """Register one lifecycle verb with the common options plus its own (``--until`` only on defer)."""

    def command(entity_id: str, item: str, current: int | None, actor: str | None, json: bool, **more: Any) -> None:
        t = _open().transition(entity_id, item, verb, current=current, actor=actor, **more)
        if json:
            emit_json(t.to_dict())
        else:
            print(f"{t.item}: {t.from_state} -> {t.to_state} ({verb} {t.id})")

    full = inspect.signature(_verb_options, eval_str=True)
    keep = [p for p in full.parameters.values() if p.name in _VERB_COMMON or p.name in own]
    command.__signature__ = full.replace(parameters=keep)  # type: ignore[attr-defined]
    command.__doc__ = doc
    app.command(verb)(command)


for _verb, _doc, _own in (
    ("claim", "WAIT -> ACTIVE: take the item (a second claimer is refused already_claimed).", ()),
    ("complete", "ACTIVE -> DONE: needs a prior `seen`, and a response if the item expects one.", ("result_ref",)),
    ("defer", "WAIT|ACTIVE -> DEFER until --until-tic K or --until TIME (a due is required).",
     ("until_tic", "until", "reason")),
    ("undefer", "DEFER -> WAIT now, before its due.", ("reason",)),
    ("nack", "WAIT -> NACK: decline the item (needs a prior `seen`).", ("reason",)),
    ("seen", "Mark the item read (no state change); archiving needs it.", ()),
):
    _verb_command(_verb, _doc, _own)


class Format(StrEnum):
    text = "text"
    json = "json"
    injection = "injection"


class Direction(StrEnum):
    inbound = "inbound"
    outbound = "outbound"
    both = "both"


@app.command("inbox")
def inbox_cmd(
    args: Annotated[
        Optional[list[str]], typer.Argument(metavar="[ENTITY] [status]", help="The entity; 'status' for counts only.")
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="text, json or injection.")] = Format.text,
    current: Annotated[Optional[int], typer.Option("--current-tic", help="The tic now.")] = None,
    direction: Annotated[Direction, typer.Option("--direction", help="inbound, outbound or both.")] = Direction.inbound,
    detailed: Annotated[bool, typer.Option("--detailed/--compact", help="Every open item, or flagged ones.")] = False,
    all_: Annotated[bool, typer.Option("--all", help="Include DONE and NACK items.")] = False,
    json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
) -> None:
    """Audit an entity's inbox: counts, flags, and open items by priority then age.

    Example: dovecote inbox ent_builder --format injection --current-tic 110
    """
    from dovecote.cli.quick import run_inbox

    run_inbox(_home["path"], list(args or []), fmt.value, current, direction.value, detailed, all_, json)


@app.command("show")
def show_cmd(
    entity_id: Annotated[str, typer.Argument(metavar="ENTITY", help="Whose inbox.")],
    item: Annotated[str, typer.Argument(metavar="ID", help="The item id (or a unique prefix).")],
    current: Annotated[Optional[int], typer.Option("--current-tic", help="The tic now.")] = None,
    json: JsonOpt = False,
) -> None:
    """Read one message whole: envelope, body, thread and lifecycle history.

    Example: dovecote show ent_builder 3f2a --json
    """
    out = _open().show(entity_id, item, current=current)
    if json:
        emit_json(out)
    else:
        sys.stdout.write(texts.show_text(out))


@app.command("view")
def view_cmd(
    entity_id: Annotated[
        Optional[str], typer.Argument(metavar="[ENTITY]", help="The entity (default: every entity).")
    ] = None,
    current: Annotated[
        Optional[int], typer.Option("--current-tic", help="The tic now (a DEFER past its due shows as WAIT).")
    ] = None,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Rewrite every owned file, even unchanged ones.")
    ] = False,
    json: JsonOpt = False,
) -> None:
    """Write the /inbox folder layout of an entity's ledger under views/agent-mailboxes/ (a cache).

    Files you put there (inside entries too) are never touched; an entry you move to another folder is
    adopted as its verb, or reported and put back when the lifecycle refuses the move.
    Example: dovecote view ent_builder --current-tic 110
    """
    result = _open().view(entity_id, current=current, rebuild=rebuild)
    if json:
        emit_json(result.to_dict())
    else:
        sys.stdout.write(texts.view_text(result.to_dict()))


import_app = Typer(help="Adopt data written by other tools.", no_args_is_help=True)
app.add_typer(import_app, name="import")


@import_app.command("inbox-tree")
def import_inbox_tree_cmd(
    path: Annotated[
        Path, typer.Argument(help="One mailbox (with --entity) or an agent-mailboxes root of ent_* folders.")
    ],
    entity_id: Annotated[Optional[str], typer.Option("--entity", help="The entity PATH is the mailbox of.")] = None,
    current: Annotated[Optional[int], typer.Option("--current-tic", help="The tic now.")] = None,
    json: JsonOpt = False,
) -> None:
    """Adopt an existing /inbox tree: flat, directory and bare-drop envelopes, with their states.

    A re-import appends nothing; a move the lifecycle forbids is reported, never forced.
    Example: dovecote import inbox-tree audit-logs/agent-mailboxes
    """
    result = _open().import_inbox_tree(path, entity_id, current=current)
    if json:
        emit_json(result.to_dict())
    else:
        sys.stdout.write(texts.import_text(result.to_dict()))


@app.command("search")
def search_cmd(
    query: Annotated[list[str], typer.Argument(metavar="QUERY", help="Plain words; every one must occur.")],
    entity_id: Annotated[Optional[str], typer.Option("--entity", help="Only this entity's inbox.")] = None,
    include_terminal: Annotated[
        bool, typer.Option("--include-terminal", help="Include DONE and NACK items.")
    ] = False,
    limit: Annotated[Optional[int], typer.Option("--limit", help="Show the newest N matches (default 50).")] = None,
    json: JsonOpt = False,
) -> None:
    """Full-text search over subjects, bodies and text artifacts, newest first.

    The index (cache/search.sqlite) is a cache: it catches up with the ledgers
    before each answer and is rebuilt from them when missing or replaced.
    Example: dovecote search deploy failed --entity ent_builder
    """
    result = _open().search(" ".join(query), entity=entity_id, include_terminal=include_terminal, limit=limit)
    if json:
        emit_json(result)
    else:
        sys.stdout.write(texts.search_text(result))


@app.command("stale-check")
def stale_check_cmd(
    current: Annotated[Optional[int], typer.Option("--current-tic", help="The tic now.")] = None,
    emit_signals: Annotated[
        bool, typer.Option("--emit-signals", help="Append one attention signal per entity per UTC day to home.")
    ] = False,
    json: JsonOpt = False,
) -> None:
    """Attention debt across every entity: items stale in WAIT or ACTIVE, counts and the oldest.

    Example: dovecote stale-check --current-tic 110 --emit-signals
    """
    result = _open().stale_check(current=current, emit_signals=emit_signals)
    if json:
        emit_json(result)
    else:
        sys.stdout.write(texts.stale_text(result))


@app.command("organize")
def organize_cmd(
    entity_id: Annotated[str, typer.Argument(metavar="ENTITY", help="Whose inbox.")],
    apply: Annotated[
        bool, typer.Option("--apply", help="Group loose files into inbound/REF_<category>/ (never deletes).")
    ] = False,
    current: Annotated[Optional[int], typer.Option("--current-tic", help="The tic now (for EXPIRED).")] = None,
    json: JsonOpt = False,
) -> None:
    """Report loose files, expired items, duplicate threads and files over 10 MiB, with proposals.

    Example: dovecote organize ent_builder --apply
    """
    result = _open().organize(entity_id, apply=apply, current=current)
    if json:
        emit_json(result)
    else:
        sys.stdout.write(texts.organize_text(result))


def run() -> Any:
    return app(prog_name="dovecote")
