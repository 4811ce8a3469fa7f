"""Rich summaries for people. They print only numbers the JSON also carries.

Every value that comes from a letter or from disk (a tool, a what, a pending
project name, a path, an error) is shown through ``_safe``: one line with its
control characters escaped (``textsafe``), and Rich markup in it shown as
text, so it can neither forge a line nor restyle the terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dovecote.cli.listing import listing
from dovecote.model.textsafe import one_line, plural

T = TypeVar("T")
MARK = {"wet_ink": "●", "in_flight": "◍", "fired_clay": "↳", "external": "◌", None: "✓"}


def _safe(value: object) -> str:
    """An untrusted value for a line printed with markup: one line, markup shown as text."""
    return escape(one_line(value))


def con() -> Console:
    return Console(highlight=False, soft_wrap=True)


def with_progress(work: Callable[[Callable[[str, int, int], None]], T]) -> T:
    """Run ``work`` with a transient progress bar fed by its progress callback."""
    from rich.progress import Progress

    with Progress(transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task("sweeping", total=None)

        def tick(label: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, description=f"sweeping {label}")

        return work(tick)


def receipt(r: dict[str, Any], title: str = "distribution") -> None:
    c = con()
    c.print(
        f"[bold]{title}[/bold]: {r['spool_total']} in spool, {r['appended']} appended, "
        f"{r['to_project']} to projects, {r['to_home']} to home"
    )
    for d in r["pending_detail"]:
        c.print(f"  pending {_safe(d['name'])}: {plural(d['letters'], 'letter')} ({_safe(d['reason'])})")
    moved = r["elsewhere"]
    if moved["letters"]:
        c.print(
            f"  {plural(moved['letters'], 'filed letter')} stay where they are though today's law would file them "
            f"elsewhere: {' '.join(moved['ids'])}",
            markup=False,
        )


def _letter_line(row: dict[str, Any]) -> str:
    """One line a letter: readable at any width, and in a pipe."""
    where = one_line(row["box"]) or "(spool)"
    return (
        f"  {MARK.get(row['fate'], '?')} {row['id']} {one_line(row['ts']) or '-'} {where} "
        f"{one_line(row['tool']) or '-'}/{one_line(row['class']) or '-'}: {one_line(row['what'])}\n"
    )


def _letter_lines(c: Console, letters: list[dict[str, Any]], title: str, limit: int | None) -> None:
    """The letters as ``listing`` shows them, under their title: the rows in one write, not one a row."""
    c.print(f"[bold]{title}[/bold]")
    c.file.write(listing(letters, _letter_line, limit))
    c.file.flush()


def _counts_line(d: dict[str, Any], word: str = "letter") -> str:
    k = d["counts"]
    return (
        f"{plural(d['total'], word)}, {d['open']} open  "
        f"(● wet_ink {k['wet_ink']}, ◍ in_flight {k['in_flight']}, ↳ fired_clay {k['fired_clay']}, "
        f"◌ external {k['external']}, ✓ receipts {d['receipts']})"
    )


def sweep(d: dict[str, Any], limit: int | None = None) -> None:
    c = con()
    if d["distribution"]:  # sweep files the spool first unless --no-distribute: say so
        receipt(d["distribution"], "distributed first (--no-distribute to only read)")
    c.print(f"[bold]sweep[/bold]: {_counts_line(d)}; misdelivery {d['misdelivery']}")
    if d["unreachable"]:
        c.print(f"[yellow]unreachable:[/yellow] {', '.join(map(_safe, d['unreachable']))}")
    for m in d["malformed"]:
        c.print(f"[red]{_safe(m['kind'])}[/red] {_safe(m['path'])}:{m['line']}: {_safe(m['detail'])}")
    if d["letters"]:
        _letter_lines(c, d["letters"], f"{plural(len(d['letters']), 'letter')}, oldest first", limit)


def box(d: dict[str, Any], limit: int | None = None) -> None:
    c = con()
    state = "" if d["exists"] else (" (no such box: reads zero)" if d["known"] else " (not in the roster: reads zero)")
    kinds = ", ".join(f"{k} {n}" for k, n in d["by_kind"].items())
    c.print(f"[bold]{d['box']}[/bold]{state}: {plural(d['held'], 'letter')}" + (f" ({kinds})" if kinds else ""))
    c.print(f"  fates: {_counts_line(d, 'field report')}")
    for m in d["malformed"]:
        c.print(f"[red]{_safe(m['kind'])}[/red] {_safe(m['path'])}:{m['line']}: {_safe(m['detail'])}")
    if d["letters"]:
        _letter_lines(c, d["letters"], f"{plural(len(d['letters']), 'letter')}, oldest first", limit)


def doctor(d: dict[str, Any]) -> None:
    c = con()
    m = d["mailbox"]
    if not m.get("available"):
        c.print(f"[bold]mailbox[/bold]: unavailable ({_safe(m.get('error'))})")
        _tokens(c, d["tokens"])
        return
    c.print("[bold]mailbox[/bold]")
    c.print(f"  spool letters        {m['spool_letters']}  ({_safe(m['spool_path'])})")
    c.print(f"  misdelivery          {m['misdelivery_total']} all time, {m['misdelivery_7d']} in 7 days")
    why = ", ".join(f"{_safe(d['name'])} ({_safe(d['reason'])}, {d['letters']})" for d in m["pending_detail"])
    c.print(f"  pending distribution {plural(m['pending_letters'], 'letter')}: {why or '-'}")
    c.print(f"  unreachable boxes    {', '.join(map(_safe, m['unreachable'])) or '-'}")
    c.print(f"  malformed lines      {m['malformed_lines']}")
    if "leases" in m:
        c.print("  leases               " + ", ".join(f"{n} {k}" for k, n in m["leases"].items()))
    _tokens(c, d["tokens"])


def _tokens(c: Console, t: dict[str, Any]) -> None:
    if "problem" in t:
        c.print(f"[bold]tokens[/bold]: [red]{_safe(t['problem'])}[/red]")
    else:
        c.print(f"[bold]tokens[/bold]: {t['active']} active of {t['issued']} issued  ({_safe(t['path'])})")


def verify(d: dict[str, Any]) -> None:
    c = con()
    if d["ok"]:
        c.print(f"verify: ok, {len(d['checked'])} reads byte-identical after rebuilding every cache")
        return
    c.print(f"[red]verify: {len(d['differ'])} of {len(d['checked'])} reads differ[/red]")
    for x in d["differ"]:
        c.print(
            f"  {_safe(x['read'])}: {x['bytes_before']} -> {x['bytes_after']} bytes, "
            f"first difference at byte {x['first_difference_at']}"
        )


def projects(rows: list[dict[str, Any]]) -> None:
    t = Table()
    for col in ("name", "root", "aliases", "box", "reachable"):
        t.add_column(col, overflow="fold")
    for r in rows:
        cells = (r["name"], r["root"], ", ".join(r["aliases"]), r["box"])
        t.add_row(*map(_safe, cells), "yes" if r["reachable"] else "NO")
    con().print(t)
