"""The person at the screen: one-time login links and the session cookie they open.

Law: a human gesture is made by a person, never by a token an agent holds
(DESIGN 9). ``dovecote serve`` prints a login link; visiting it burns the
link and sets an HttpOnly, SameSite=Strict session cookie, and only a request
carrying that cookie (and no ``Authorization`` header: a bearer token is an
agent's or an operator's, whatever it is) is a human session. A request with a
bearer token neither redeems a link nor burns it (``refuse_token``). Links live in
the server's memory as SHA-256 digests compared in constant time, so a leaked
log line of its memory holds no usable secret.

A session is its cookie: the person and a random nonce, signed with an HMAC
under a key the server draws when it starts. No table of sessions is kept, so
every worker process of one ``serve --workers N`` (they are forked after the
key is drawn) honours a session any of them opened, and a restart (a new key)
signs everyone out. A link is burnt once across those workers: with a
``burnt`` folder (``serve`` makes one per run), redeeming it also creates a
file named by its digest with ``O_EXCL``, which only one process can do.

A page's action (a POST form) carries the session's CSRF token (``csrf``: an
HMAC of the session cookie under the same key, so it is bound to that session
and never stored) and must come from this server's own origin
(``same_origin``): another site can neither read the token nor pass the
Origin check, even before SameSite=Strict keeps the cookie from it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path

from starlette.requests import Request

from dovecote.errors import Refusal
from dovecote.util import fileops

COOKIE = "dovecote_session"
LOGIN_PATH = "/login/{token}"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _find(table: dict[str, str], secret: str) -> str | None:
    """The key of ``table`` equal to ``secret``'s digest, compared in constant time."""
    want = _digest(secret)
    return next((k for k in table if hmac.compare_digest(k, want)), None)


@dataclass
class Sessions:
    """Login links not yet used (digest -> person), and the key that signs the sessions they open.

    ``burnt``: a folder shared by every process serving these links (see the module
    docstring); None when one process serves them alone.
    """

    links: dict[str, str] = field(default_factory=dict)
    burnt: Path | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _key: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def issue(self, person: str) -> str:
        """A new one-time login token for ``person`` (the path is ``LOGIN_PATH``)."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            self.links[_digest(token)] = person
        return token

    def redeem(self, token: str) -> tuple[str, str]:
        """Burn a login token: (the new session's cookie value, the person). Refuses ``invalid_login``."""
        with self._lock:
            key = _find(self.links, token)
            person = self.links.pop(key) if key is not None else None
        if person is None or (key is not None and not self._burn(key)):
            raise Refusal("invalid_login", "this login link is unknown or was already used; ask `dovecote serve` "
                                           "for a new one")
        return self._sign(person), person

    def _burn(self, key: str) -> bool:
        """Whether this process is the one that burns link ``key`` (always, with no shared folder)."""
        if self.burnt is None:
            return True
        try:
            fileops.write_new(self.burnt / key, b"", 0o600, sync=False)
        except FileExistsError:
            return False
        return True

    def _mac(self, body: str) -> str:
        return hmac.new(self._key, b"session:" + body.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def _sign(self, person: str) -> str:
        name = base64.urlsafe_b64encode(person.encode("utf-8", "surrogatepass")).decode("ascii").rstrip("=")
        body = f"{name}.{secrets.token_urlsafe(16)}"
        return f"{body}.{self._mac(body)}"

    def person(self, request: Request) -> str | None:
        """The person whose session ``request`` carries; None for none, and for any request with a token."""
        if "authorization" in request.headers:
            return None
        cookie = request.cookies.get(COOKIE)
        if not cookie:
            return None
        body, _, mac = cookie.rpartition(".")
        if not body or not hmac.compare_digest(self._mac(body).encode(), mac.encode("utf-8", "surrogatepass")):
            return None
        name = body.partition(".")[0]
        try:
            return base64.urlsafe_b64decode(name + "=" * (-len(name) % 4)).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None

    def csrf(self, request: Request) -> str | None:
        """The CSRF token of the request's session (None: no session)."""
        if self.person(request) is None:
            return None
        cookie = request.cookies.get(COOKIE, "")
        return hmac.new(self._key, b"csrf:" + cookie.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def check_csrf(self, request: Request, given: str) -> None:
        """Refuse ``csrf_failed`` unless ``given`` is this session's CSRF token and the request is same-origin."""
        same_origin(request)
        want = self.csrf(request)
        if want is None or not hmac.compare_digest(want.encode(), given.encode("utf-8", "surrogatepass")):
            raise Refusal("csrf_failed", "the form did not carry this session's token; reload the page and try again")


def refuse_token(request: Request, act: str) -> None:
    """A person's act (redeeming a login link, a page's action) carries no ``Authorization`` header: a bearer
    token is an agent's or an operator's, whatever it is, so ``human_gesture_required``, and nothing changes
    (a link stays unburnt)."""
    if "authorization" in request.headers:
        raise Refusal("human_gesture_required", f"{act} is the person's; a bearer token is an agent's or an "
                                                "operator's (it reads and moves items through the API)")


def same_origin(request: Request) -> None:
    """Refuse ``csrf_failed`` unless the request's Origin (else its Referer) is this server.

    The pages are sent with ``Referrer-Policy: no-referrer`` (``headers``), under which a browser
    names the origin of the page's own form ``null``; such a form is admitted only when the browser
    also says ``Sec-Fetch-Site: same-origin`` (a header no page's script can set or forge).
    """
    own = f"{request.url.scheme}://{request.url.netloc}"
    origin = request.headers.get("origin")
    if origin == "null" and request.headers.get("sec-fetch-site") == "same-origin":
        return
    if origin is not None:
        if origin != own:
            raise Refusal("csrf_failed", f"the form came from {origin!r}, not from this server")
        return
    referer = request.headers.get("referer", "")
    if referer != own and not referer.startswith(own + "/"):
        raise Refusal("csrf_failed", "the form came with neither an Origin nor a Referer of this server")
