"""Content-addressed storage for artifacts and large bodies.

A blob lives at ``artifacts/<first two hex>/<sha256>`` and is named by its
hash, so storing the same bytes twice stores them once, and a reference can
never point at different bytes later. Written tmp + fsync + rename.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from dovecote.errors import Refusal
from dovecote.ledger.jsonl import write_atomic
from dovecote.model.letters import is_hex
from dovecote.util.digests import sha256

if TYPE_CHECKING:
    from dovecote.ops.context import Context


def blob_path(ctx: Context, ref: str) -> Path:
    digest = ref.removeprefix("sha256:")
    if len(digest) != 64 or not is_hex(digest):
        raise Refusal("invalid_field", f"{ref!r} is not an artifact reference (sha256:<64 hex>)")
    return ctx.layout.artifacts / digest[:2] / digest


def put_bytes(ctx: Context, data: bytes) -> str:
    """Store bytes; return their reference ``sha256:<hex>``."""
    limit = ctx.roster.limits.body_hard_limit
    if len(data) > limit:
        raise Refusal("too_large", f"{len(data)} bytes is over the hard limit of {limit}")
    ref = "sha256:" + sha256(data).hexdigest()
    path = blob_path(ctx, ref)
    if not path.exists():
        write_atomic(path, data)
    return ref


def put_file(ctx: Context, path: Path) -> dict[str, Any]:
    """Copy a file into the store; return its artifact entry {ref, name, size}."""
    if not path.is_file():
        raise Refusal("invalid_field", f"artifact {str(path)!r} is not a readable file")
    size = path.stat().st_size
    limit = ctx.roster.limits.body_hard_limit
    if size > limit:
        raise Refusal("too_large", f"artifact {path.name} is {size} bytes; the hard limit is {limit}")
    ref = put_bytes(ctx, path.read_bytes())
    return {"ref": ref, "name": path.name, "size": size}


def get_bytes(ctx: Context, ref: str) -> bytes | None:
    try:
        return blob_path(ctx, ref).read_bytes()
    except (OSError, Refusal):
        return None
