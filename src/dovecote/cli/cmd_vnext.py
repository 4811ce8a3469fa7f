"""``import vnext``: read a vNext mailbox directory, and import it with ``--write``.

Registered under the ``import`` group next to ``import inbox-tree``. The text
prints the tracker counts in the vNext status view's own form
(``Trackers:`` then ``  - key: value``, same keys, same order), so the two
can be compared line for line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dovecote.cli.boundary import Typer
from dovecote.cli.common import JsonOpt, opened
from dovecote.cli.options import argument, option
from dovecote.cli.output import show
from dovecote.model.textsafe import one_line
from dovecote.verbs import ImportVnext


def _counts(title: str, counts: dict[str, int]) -> list[str]:
    return [f"{title}:", *([f"  - {one_line(k)}: {v}" for k, v in counts.items()] or ["  - none"])]


def vnext_text(r: dict[str, Any]) -> str:
    """The summary: what the directory holds, its tracker counts as vNext prints them, and the letters."""
    head = "imported" if r["write"] else "would import (dry run; --write imports)"
    intake = r["intake"]
    lines = [
        f"vNext mailbox {one_line(r['path'])}",
        f"Intake: {intake['pending']} pending, {intake['processed']} processed, {intake['quarantine']} quarantined",
        *_counts("Trackers", r["tracker_counts"]),
        *_counts("Delivery states", r["delivery_state_counts"]),
        *_counts("Ack states", r["ack_state_counts"]),
        *_counts("Live notify states", r["live_notify_state_counts"]),
        *_counts("Schema drift (as written, before normalization)", r["schema_drift_counts"]),
        f"Trackers needing v3 normalization: {r['needs_migration']} (the files stay as they are)",
        *[f"  - {one_line(str(m['recipient']))} :: {one_line(str(m['envelope_id']))} :: inferred="
          f"{','.join(sorted(m['migration_inference'])) or 'none'}" for m in r["migrated_trackers"][:10]],
        f"Envelopes: {r['envelopes']['distinct']} delivered, {r['envelopes']['deliveries']} deliveries "
        f"({r['envelopes']['without_envelope_file']} from a tracker alone); not imported: "
        f"{r['envelopes']['pending_not_imported']} pending, {r['envelopes']['quarantined']} quarantined",
        f"Acks: {r['acks']['from_trackers']} from trackers; {r['acks']['unreconciled_not_imported']} ack file(s) "
        f"not reconciled by vNext yet (imported once they are); ledger rows: {sum(r['ledger_rows'].values())}",
        f"Letters {head}: {r['letters']['planned']} "
        f"({', '.join(f'{n} {k}' for k, n in r['letters_by_kind'].items()) or 'none'})",
    ]
    if r["write"]:
        lines.append(f"  appended {r['letters']['appended']}, already present {r['letters']['already_present']}")
    if r["entities_missing"]:
        lines.append(f"Not registered entities (import --write refuses): {', '.join(r['entities_missing'])}")
    lines.append(f"Malformed files: {r['malformed_count']}")
    lines += [f"  {one_line(m['path'])}: {m['reason']}: {one_line(m['detail'])}" for m in r["malformed"]]
    lines += [f"  note {one_line(str(n.get('path') or n.get('envelope_id')))}: {n['reason']}: {one_line(n['detail'])}"
              for n in r["notes"]]
    return "\n".join(lines) + "\n"


def register(import_app: Typer) -> None:
    @import_app.command("vnext")
    def import_vnext_cmd(
        path: Path = argument(ImportVnext, "path"),
        write: bool = option(ImportVnext, "write", "--write"),
        json: JsonOpt = False,
    ) -> None:
        """Read a vNext mailbox directory's tracker counts.

        The counts are those the vNext status view prints.

        A dry run by default; --write imports its envelopes, acks and tracker
        history as letters (a re-import appends nothing). The directory is never modified.
        """
        show(opened().import_vnext(ImportVnext(path=str(path), write=write)), json=json, text=vnext_text)
