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
from dovecote.cli.common import JsonOpt, opened
from dovecote.cli.options import argument, option
from dovecote.cli.output import show
from dovecote.model.textsafe import one_line
from dovecote.verbs import (
    MOVE_OPTIONS,
    Message,
    Move,
    MoveKind,
    OutboxSend,
    Send,
    decode,
)

outbox_app = Typer(help="Deliver outbound drafts.", no_args_is_help=True)


def _message_command(app: Typer, name: str, doc_text: str) -> None:
    """Register ``send`` or ``draft``: the options of ``Message``, another destination.

    ``send`` takes the ``Send`` verb: ``Message`` plus the options in
    ``cmd_delivery.send_options`` (``--type``, ``--to-all``, the vNext fields),
    spliced into its signature; its ``--recipient`` is optional (``--to-all``).
    """

    def command(
        recipient: str = option(Message, "recipient", "--recipient", "--to"),
        subject: str = option(Message, "subject", "--subject"),
        body: Optional[str] = option(Message, "body", "--body"),
        body_file: Optional[Path] = option(Message, "body_file", "--body-file"),
        sender: Optional[str] = option(Message, "sender", "--sender", "--from"),
        priority: str = option(Message, "priority", "--priority"),
        category: str = option(Message, "category", "--category"),
        trust_level: str = option(Message, "trust_level", "--trust-level", "--trust"),
        thread_id: Optional[str] = option(Message, "thread_id", "--thread-id", "--thread"),
        reply_to: Optional[str] = option(Message, "reply_to", "--reply-to"),
        expires_at_tic: Optional[int] = option(Message, "expires_at_tic", "--expires-at-tic", "--expires-tic"),
        defer_until_tic: Optional[int] = option(Message, "defer_until_tic", "--defer-until-tic"),
        reminder_tic: Optional[int] = option(Message, "reminder_tic", "--reminder-tic"),
        artifact_paths: Optional[list[Path]] = option(
            Message, "artifact_paths", "--artifact", metavar="PATH", repeat="repeat"
        ),
        response_expected: Optional[bool] = option(
            Message, "response_expected", "--response-expected/--no-response-expected"
        ),
        current_tic: Optional[int] = option(Message, "current_tic", "--current-tic"),
        idempotency_key: Optional[str] = option(Message, "idempotency_key", "--idempotency-key"),
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
    sender: Optional[str] = option(OutboxSend, "sender", "--sender", "--from"),
    json: JsonOpt = False,
) -> None:
    """Deliver every pending draft, each exactly once.

    Each recipient is verified; a re-run never delivers one twice."""

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
    entity_id: str = argument(Move, "entity_id", metavar="ENTITY"),
    ref: str = argument(Move, "ref", metavar="ID"),
    until_tic: Optional[int] = option(Move, "until_tic", "--until-tic"),
    until: Optional[str] = option(Move, "until", "--until"),
    reason: Optional[str] = option(Move, "reason", "--reason"),
    result_ref: Optional[str] = option(Move, "result_ref", "--result-ref"),
    current_tic: Optional[int] = option(Move, "current_tic", "--current-tic"),
    actor: Annotated[Optional[str], typer.Option("--actor", help="Who acts (default: the entity).")] = None,
    json: JsonOpt = False,
) -> None:
    """Every option a lifecycle move may take; each move's command shows only its own (``MOVE_OPTIONS``)."""


_MOVE_COMMON = ("entity_id", "ref", "current_tic", "actor", "json")

MOVE_DOCS = {
    MoveKind.claim: "WAIT -> ACTIVE: take the item.\n\nA second claimer is refused already_claimed.",
    MoveKind.complete: ("ACTIVE -> DONE: finish the item.\n\n"
                        "Needs a prior `seen`, and a response if the item expects one."),
    MoveKind.defer: "WAIT|ACTIVE -> DEFER until a tic or a time.\n\nUntil --until-tic K or --until TIME (a due is "
                    "required).",
    MoveKind.undefer: "DEFER -> WAIT now, before its due.",
    MoveKind.nack: "WAIT -> NACK: decline the item (needs a prior `seen`).",
    MoveKind.seen: "Mark the item read (no state change); archiving needs it.",
    MoveKind.unseen: "Mark the item unread again (no state change).\n\nArchiving it then needs a new `seen`.",
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
    """,
    )
    _message_command(
        app, "draft", """Write an outbound draft into the sender's box.

        The draft is an outbound (EMIT) item; `outbox send` delivers it."""
    )
    app.add_typer(outbox_app, name="outbox")
    for kind in MoveKind:
        _move_command(app, kind)
