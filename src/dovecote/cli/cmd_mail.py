"""Entity mail: ``send``, ``draft``, ``outbox send`` and the lifecycle moves.

Each option is a field of its verb (``Message``, ``OutboxSend``, ``Move``), its
flag the field's name and its help the field's doc. The flags these commands
had before the fields were named after the envelope (``--to``, ``--from``,
``--trust``, ``--thread``, ``--expires-tic``) still work, as hidden aliases.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from dovecote.cli import cmd_delivery
from dovecote.cli.boundary import Typer
from dovecote.cli.common import JsonOpt, one_of, opened, repeated
from dovecote.cli.output import show
from dovecote.model.textsafe import one_line
from dovecote.verbs import (
    MOVE_OPTIONS,
    Category,
    Message,
    Move,
    MoveKind,
    OutboxSend,
    Priority,
    Send,
    TrustLevel,
    decode,
    doc,
)

outbox_app = Typer(help="Deliver outbound drafts.", no_args_is_help=True)

CurrentOpt = Annotated[Optional[int], typer.Option("--current-tic", help=doc(Move, "current_tic"))]


def _message_command(app: Typer, name: str, doc_text: str) -> None:
    """Register ``send`` or ``draft``: the options of ``Message``, another destination.

    ``send`` takes the ``Send`` verb: ``Message`` plus the options in
    ``cmd_delivery.send_options`` (``--type``, ``--to-all``, the vNext fields),
    spliced into its signature; its ``--recipient`` is optional (``--to-all``).
    """

    def command(
        recipient: Annotated[str, typer.Option("--recipient", "--to", help=doc(Message, "recipient"))],
        subject: Annotated[str, typer.Option("--subject", help=doc(Message, "subject"))],
        body: Annotated[Optional[str], typer.Option("--body", help=doc(Message, "body"))] = None,
        body_file: Annotated[Optional[Path], typer.Option("--body-file", help=doc(Message, "body_file"))] = None,
        sender: Annotated[Optional[str], typer.Option("--sender", "--from", help=doc(Message, "sender"))] = None,
        priority: Annotated[
            str, typer.Option("--priority", metavar=one_of(Message, "priority"), help=doc(Message, "priority"))
        ] = Priority.normal.value,
        category: Annotated[
            str, typer.Option("--category", metavar=one_of(Message, "category"), help=doc(Message, "category"))
        ] = Category.notification.value,
        trust_level: Annotated[
            str,
            typer.Option(
                "--trust-level", "--trust", metavar=one_of(Message, "trust_level"), help=doc(Message, "trust_level")
            ),
        ] = TrustLevel.peer.value,
        thread_id: Annotated[
            Optional[str], typer.Option("--thread-id", "--thread", help=doc(Message, "thread_id"))
        ] = None,
        reply_to: Annotated[Optional[str], typer.Option("--reply-to", help=doc(Message, "reply_to"))] = None,
        expires_at_tic: Annotated[
            Optional[int], typer.Option("--expires-at-tic", "--expires-tic", help=doc(Message, "expires_at_tic"))
        ] = None,
        defer_until_tic: Annotated[
            Optional[int], typer.Option("--defer-until-tic", help=doc(Message, "defer_until_tic"))
        ] = None,
        reminder_tic: Annotated[
            Optional[int], typer.Option("--reminder-tic", help=doc(Message, "reminder_tic"))
        ] = None,
        artifact_paths: Annotated[
            Optional[list[Path]],
            typer.Option("--artifact", metavar="PATH", help=repeated(doc(Message, "artifact_paths"), "repeat")),
        ] = None,
        response_expected: Annotated[
            Optional[bool],
            typer.Option("--response-expected/--no-response-expected", help=doc(Message, "response_expected")),
        ] = None,
        current_tic: Annotated[Optional[int], typer.Option("--current-tic", help=doc(Message, "current_tic"))] = None,
        idempotency_key: Annotated[
            Optional[str], typer.Option("--idempotency-key", help=doc(Message, "idempotency_key"))
        ] = None,
        json: JsonOpt = False,
        **work: Any,
    ) -> None:
        fields = {
            "recipient": recipient, "subject": subject, "body": body,
            "body_file": None if body_file is None else str(body_file), "sender": sender, "priority": priority,
            "category": category, "trust_level": trust_level, "thread_id": thread_id, "reply_to": reply_to,
            "expires_at_tic": expires_at_tic, "defer_until_tic": defer_until_tic, "reminder_tic": reminder_tic,
            "artifact_paths": [str(p) for p in artifact_paths or ()], "response_expected": response_expected,
            "current_tic": current_tic, "idempotency_key": idempotency_key,
        }
        dc = opened()
        if name == "send":
            cmd_delivery.show_sent(dc.send(decode(Send, {**fields, **cmd_delivery.send_fields(work)})), json)
            return
        show(dc.draft(decode(Message, fields)), json=json, text=lambda r: (
            f"{r['id']}\n" if r["appended"] else f"{r['id']} (already present: same idempotency key)\n"
        ))

    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.kind is not p.VAR_KEYWORD]
    if name == "send":
        extra = inspect.signature(cmd_delivery.send_options, eval_str=True).parameters
        own = [extra["recipient"] if p.name == "recipient" else p for p in own]
        own += [p for n, p in extra.items() if n != "recipient"]
    command.__signature__ = inspect.Signature([p.replace(kind=p.KEYWORD_ONLY) for p in own])  # type: ignore[attr-defined]
    command.__doc__ = doc_text
    app.command(name)(command)


@outbox_app.command("send")
def outbox_send_cmd(
    sender: Annotated[Optional[str], typer.Option("--sender", "--from", help=doc(OutboxSend, "sender"))] = None,
    json: JsonOpt = False,
) -> None:
    """Deliver every pending draft, verifying each recipient (a re-run never delivers one twice)."""

    def text(rows: list[dict[str, Any]]) -> str:
        out = []
        for r in rows:
            if r["delivered"]:
                out.append(f"delivered {r['draft']} -> {one_line(r['to'])} as {r['message']}\n")
            else:
                out.append(f"kept {r['draft']}: {one_line(r['reason'])} ({one_line(r['to']) or 'no recipient'})\n")
        return "".join(out) or "no drafts to send\n"

    show(opened().outbox_send(OutboxSend(sender=sender)), json=json, text=text)


def _move_options(
    entity_id: Annotated[str, typer.Argument(metavar="ENTITY", help=doc(Move, "entity_id"))],
    ref: Annotated[str, typer.Argument(metavar="ID", help=doc(Move, "ref"))],
    until_tic: Annotated[Optional[int], typer.Option("--until-tic", help=doc(Move, "until_tic"))] = None,
    until: Annotated[Optional[str], typer.Option("--until", help=doc(Move, "until"))] = None,
    reason: Annotated[Optional[str], typer.Option("--reason", help=doc(Move, "reason"))] = None,
    result_ref: Annotated[Optional[str], typer.Option("--result-ref", help=doc(Move, "result_ref"))] = None,
    current_tic: CurrentOpt = None,
    actor: Annotated[Optional[str], typer.Option("--actor", help="Who acts (default: the entity).")] = None,
    json: JsonOpt = False,
) -> None:
    """Every option a lifecycle move may take; each move's command shows only its own (``MOVE_OPTIONS``)."""


_MOVE_COMMON = ("entity_id", "ref", "current_tic", "actor", "json")

MOVE_DOCS = {
    MoveKind.claim: "WAIT -> ACTIVE: take the item (a second claimer is refused already_claimed).",
    MoveKind.complete: "ACTIVE -> DONE: needs a prior `seen`, and a response if the item expects one.",
    MoveKind.defer: "WAIT|ACTIVE -> DEFER until --until-tic K or --until TIME (a due is required).",
    MoveKind.undefer: "DEFER -> WAIT now, before its due.",
    MoveKind.nack: "WAIT -> NACK: decline the item (needs a prior `seen`).",
    MoveKind.seen: "Mark the item read (no state change); archiving needs it.",
}


def _move_command(app: Typer, kind: MoveKind) -> None:
    """Register one lifecycle move with the common options plus its own."""

    def command(entity_id: str, ref: str, current_tic: int | None, actor: str | None, json: bool, **own: Any) -> None:
        t = opened().move(Move(kind=kind, entity_id=entity_id, ref=ref, current_tic=current_tic, **own), actor=actor)
        show(t, json=json, text=lambda r: f"{r['item']}: {r['from']} -> {r['to']} ({kind} {r['id']})\n")

    full = inspect.signature(_move_options, eval_str=True)
    keep = [p for p in full.parameters.values() if p.name in _MOVE_COMMON or p.name in MOVE_OPTIONS[kind]]
    command.__signature__ = full.replace(parameters=keep)  # type: ignore[attr-defined]
    command.__doc__ = MOVE_DOCS[kind]
    app.command(kind.value)(command)


def register(app: Typer) -> None:
    _message_command(
        app,
        "send",
        """Deliver a message to an entity's inbox and print its id.

    Every send is a new message (its own msg_<uuid7> message id), even when two are identical;
    with --idempotency-key a retry returns the message that key already delivered.

    Example: dovecote send --recipient ent_builder --sender ent_ops --subject "rebuild" --category directive
    """,
    )
    _message_command(
        app, "draft", """Write an outbound draft (EMIT) into the sender's box; `outbox send` delivers it."""
    )
    app.add_typer(outbox_app, name="outbox")
    for kind in MoveKind:
        _move_command(app, kind)
