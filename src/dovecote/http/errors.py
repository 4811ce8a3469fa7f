"""The one JSON error shape of the HTTP face, and the handlers that render every failure in it.

Law: every failure an HTTP client can meet is one body, ``{"ok": false,
"error", "reason", "detail", "status"}`` (plus ``details`` when a refusal
carries data), with the status from ``errors.REASONS``, the one keyword table.
A refusal is the request's fault (4xx); a ``StoreError`` is the disk's (503,
``io_error``: try again); anything else is a bug (500, ``internal_error``),
reported in the same shape and never as a traceback or an HTML page. Under
``/api`` the body is JSON; the Human View shows the same words as a page.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from dovecote.errors import Refusal, StoreError

log = logging.getLogger("dovecote.http")

#: Starlette's own HTTP errors (no route, wrong method) as refusal keywords.
HTTP_KEYWORDS = {404: "not_found", 405: "method_not_allowed"}


class ErrorBody(msgspec.Struct, omit_defaults=True):
    """What every failed request answers: ``reason`` is a stable keyword, ``detail`` says what was wrong."""

    ok: bool
    error: str
    reason: str
    detail: str
    status: int
    details: dict[str, Any] | None = None


def refusal_body(r: Refusal) -> dict[str, Any]:
    """The shape of a refusal: ``Refusal.body()``, ``to_dict()`` and its ``detail``."""
    return r.body()


def failure_body(reason: str, detail: str, status: int) -> dict[str, Any]:
    """The shape of a failure that is not a refusal (``io_error``, ``internal_error``)."""
    return {"ok": False, "error": f"{reason}: {detail}", "reason": reason, "detail": detail, "status": status}


def body_of(exc: Exception) -> dict[str, Any]:
    """Any exception as the error shape (see the module docstring for the mapping)."""
    if isinstance(exc, Refusal):
        return refusal_body(exc)
    if isinstance(exc, HTTPException) and exc.status_code in HTTP_KEYWORDS:
        return refusal_body(Refusal(HTTP_KEYWORDS[exc.status_code], str(exc.detail)))
    if isinstance(exc, StoreError):
        return failure_body("io_error", str(exc), 503)
    if isinstance(exc, OSError):
        return failure_body("io_error", f"{type(exc).__name__}: {exc.strerror or exc}", 503)
    log.error("internal error", exc_info=exc)
    return failure_body("internal_error", f"{type(exc).__name__} (a bug: the server log has the traceback)", 500)


def wants_json(request: Request) -> bool:
    """Whether a failure is answered as JSON (the API and the schema) rather than as a page."""
    path = request.url.path
    return path.startswith("/api/") or path == "/openapi.json" or path == "/api"


async def handle(request: Request, exc: Exception) -> Response:
    """The one exception handler: JSON under /api, else the Human View's error page."""
    body = body_of(exc)
    if wants_json(request):
        return JSONResponse(body, status_code=body["status"])
    from dovecote.http.pages import error_page

    return error_page(request, body)
