"""Token use cases: issue, list, revoke, authenticate, and the file's health.

The token file (``<home>/tokens.jsonl``) is a ledger like any other: records
are appended under its lock and fsynced (``ledger.append``), a revoke is one
more record, and nothing is ever rewritten. It differs in one way: it is
created mode 0600 and refused (``insecure_tokens``) once anyone else may read
it, because even hashes of tokens are nobody else's business. Tokens live in
the home's files whichever store holds the boxes.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote.errors import Refusal, StoreError
from dovecote.ledger import append as ledger_append
from dovecote.ledger import jsonl as ledger
from dovecote.model import credentials as tk
from dovecote.model.addresses import check_name
from dovecote.model.letters import canonical_line, format_ts
from dovecote.util import fileops

if TYPE_CHECKING:
    from dovecote.ops.context import Context

FILE = "tokens.jsonl"


def tokens_path(ctx: Context) -> Path:
    return ctx.layout.root / FILE


@dataclass(frozen=True, slots=True)
class Issued:
    """A token just issued: the only value that ever holds the token itself."""

    token: str
    row: tk.TokenRow

    def to_dict(self) -> dict[str, Any]:
        return {"token": self.token, **self.row.to_dict()}


def _private(path: Path) -> bool | None:
    """Whether only the owner may read or write the file (None: there is no file)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    return stat.S_IMODE(mode) & 0o077 == 0


def _check_private(path: Path) -> None:
    if _private(path) is False:
        raise Refusal("insecure_tokens", f"{path} may be read by others; `chmod 600 {path}` (nothing was read)")


def _create(path: Path) -> None:
    """Create the file 0600 (before the ledger opens it, which would make it 0644), directory fsynced."""
    ledger.ensure_dir(path.parent)
    try:
        fileops.write_new(path, b"", 0o600, sync=False)
    except FileExistsError:
        return
    except OSError as e:
        raise StoreError(f"cannot create {path}: {e.strerror or e}") from e
    ledger.fsync_dir(path.parent)


def _table(ctx: Context) -> dict[str, tk.TokenRow]:
    path = tokens_path(ctx)
    _check_private(path)
    reader = ledger.LedgerReader(path)
    reader.refresh()
    return tk.fold(letter.data() for letter in reader.letters)


def issue(ctx: Context, entity_id: str, role: str = "agent") -> Issued:
    """Issue a token for ``entity_id``; the token is in the answer and nowhere else.

    An agent token needs a registered entity (it is bound to that entity's box).
    """
    tk.check_role(role)
    check_name(entity_id, "entity id")
    if role == "agent" and ctx.roster.entity(entity_id) is None:
        raise Refusal("unknown_entity", f"no entity {entity_id!r} in the roster (dovecote entity add)")
    path = tokens_path(ctx)
    _check_private(path)
    _create(path)
    token = tk.new_token()
    digest = tk.token_hash(token)
    ts = format_ts(ctx.now())
    line = canonical_line(tk.issue_record(digest, entity_id, role, ts, ctx.actor.author()))
    ledger_append.append(ledger.LedgerReader(path), [line])
    return Issued(token, tk.TokenRow(tk.token_id(digest), digest, entity_id, role, ts))


def list_tokens(ctx: Context) -> list[tk.TokenRow]:
    """Every token issued, revoked ones too (with when), in issue order."""
    return list(_table(ctx).values())


def revoke(ctx: Context, tid: str) -> tk.TokenRow:
    """Revoke a token by id: a record appended under the file's lock. Revoking twice changes nothing."""
    path = tokens_path(ctx)
    _check_private(path)
    if _private(path) is None:
        raise Refusal("unknown_token", f"no token {tid!r} was issued (there is no token file)")
    with ledger_append.locked(ledger.LedgerReader(path)) as led:
        rows = tk.fold(letter.data() for letter in led.reader.letters)
        row = rows.get(tid)
        if row is None:
            raise Refusal("unknown_token", f"no token {tid!r} was issued (`dovecote token list` names them)")
        if row.revoked is not None:
            return row
        ts = format_ts(ctx.now())
        led.append([canonical_line(tk.revoke_record(tid, ts, ctx.actor.author()))])
    return tk.fold(letter.data() for letter in led.reader.letters)[tid]


@dataclass
class TableCache:
    """The token table as last read, and the file's stamp then: a server checks every request's token, and
    re-reading an unchanged file each time would cost more than the request. Any append (an issue, a revoke)
    or a chmod changes the stamp, so the next check reads the file again (a revoke stops a token at once)."""

    state: tuple[tuple[int, ...], dict[str, tk.TokenRow]] | None = None
    #: the token file's path as text, once made (a handle's home does not move)
    path: str | None = None

    def path_in(self, ctx: Context) -> str:
        if self.path is None:
            self.path = str(tokens_path(ctx))
        return self.path


def _stamp(path: str | Path) -> tuple[int, ...]:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return ()
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)


def authenticate(ctx: Context, token: str, cache: TableCache | None = None) -> tk.Principal:
    """The principal of a token; ``unauthorized`` for an unknown or revoked one (``cache``: see ``TableCache``)."""
    if cache is None:
        return tk.principal_of(_table(ctx), token)
    stamp = _stamp(cache.path_in(ctx))  # before the read: a change meanwhile is read again next time
    state = cache.state
    if state is None or state[0] != stamp:
        state = (stamp, _table(ctx))
        cache.state = state  # one assignment: a thread reads the old pair or the new one, never half
    return tk.principal_of(state[1], token)


def authenticate_cached(ctx: Context, token: str, cache: TableCache) -> tk.Principal | None:
    """``authenticate`` when the cached table is the file as it is now (one stat tells), else None:
    what a server's event loop may do itself, leaving a read of the file to a worker thread."""
    state = cache.state
    if state is None or state[0] != _stamp(cache.path_in(ctx)):
        return None
    return tk.principal_of(state[1], token)


def health(ctx: Context) -> dict[str, Any]:
    """What ``doctor`` says of the token file: counts and whether it is private, never a token."""
    path = tokens_path(ctx)
    private = _private(path)
    out: dict[str, Any] = {"path": str(path), "exists": private is not None, "private": private}
    if private is None:
        return {**out, "issued": 0, "active": 0}
    if not private:
        return {**out, "problem": f"readable by others: chmod 600 {path}"}
    try:
        rows = _table(ctx)
    except (OSError, StoreError) as e:
        return {**out, "problem": str(e)}
    return {**out, "issued": len(rows), "active": sum(1 for r in rows.values() if r.revoked is None)}
