"""Tokens are compared in constant time and never written down: not by ``serve``, not in an error, not on disk.

- No ``==`` or ``!=`` in ``src/`` compares a value named like a token, a hash, a digest, a MAC or a secret (an
  AST walk): such comparisons go through ``hmac.compare_digest``, which the modules that check them use.
- A real ``dovecote serve`` used with a good token, a wrong one and a malformed header prints none of them on
  stdout or stderr (its access log is off; uvicorn's warnings stay), and no file of the home holds one (the
  token file keeps hashes). An error answer to a wrong token never echoes the header.
"""

from __future__ import annotations

import ast
import signal
from pathlib import Path

import httpx2 as httpx
import pytest
from starlette.testclient import TestClient

from dovecote.http.app import create_app
from helpers import snapshot
from serverhelpers import ENTITY, SENDER, assert_error_shape, served_home, serving

SRC = Path(__file__).resolve().parents[2] / "src" / "dovecote"
SECRET_WORDS = ("token", "hash", "digest", "mac", "secret", "csrf", "password")
#: Comparisons of digests of content anyone may read (no secret to time): file, expression -> why.
CONTENT_DIGESTS = {
    ("ledger/jsonl.py", "window_digest(head) == self._digest"): "a checkpoint's digest of ledger bytes",
    ("ops/delivery/intake.py", "letter.data().get('sha256') == digest"):
        "a quarantine note's hash of the envelope file",
}


def _names(node: ast.AST) -> list[str]:
    """The identifiers an expression is spelled with (``row.hash`` -> row, hash)."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.append(n.id)
        elif isinstance(n, ast.Attribute):
            out.append(n.attr)
    return out


def _secretish(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                                          and node.func.id in ("len", "type", "isinstance")):
        return False
    return any(w == name.lower() or name.lower().endswith("_" + w) or name.lower().startswith(w + "_")
               for name in _names(node) for w in SECRET_WORDS)


def test_no_token_or_hash_is_compared_with_eq() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
                sides = [node.left, *node.comparators]
                where = (str(path.relative_to(SRC)), ast.unparse(node))
                if all(not isinstance(s, ast.Constant) for s in sides) and any(_secretish(s) for s in sides) \
                        and where not in CONTENT_DIGESTS:
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "compare secrets with hmac.compare_digest:\n" + "\n".join(found)


def test_the_checks_that_compare_secrets_use_compare_digest() -> None:
    for module in ("model/credentials.py", "http/session.py"):
        assert "hmac.compare_digest(" in (SRC / module).read_text(), module


def test_the_ast_check_catches_a_plain_comparison() -> None:
    """The check above is not vacuous: it flags what it is meant to."""
    bad = ast.parse("ok = row.hash == digest\nif token != given_token: pass\nsame = len(token) == 3\n")
    flagged = [n for n in ast.walk(bad) if isinstance(n, ast.Compare)
               and any(_secretish(s) for s in [n.left, *n.comparators])
               and all(not isinstance(s, ast.Constant) for s in [n.left, *n.comparators])]
    assert len(flagged) == 2


def test_a_wrong_token_is_refused_without_echoing_it(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    good = dc.token_issue(SENDER, "operator").token
    wrong = good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")
    with TestClient(create_app(dc)) as c:
        for header in (f"Bearer {wrong}", f"Basic {good}", f"Bearer {good} {wrong}", f"bearer{wrong}"):
            r = c.post(f"/api/v1/entities/{ENTITY}/messages", json={"subject": "x"},
                       headers={"Authorization": header})
            assert_error_shape(r, 401, "unauthorized")
            assert wrong not in r.text and good not in r.text, header


@pytest.mark.files_only
def test_serve_never_prints_or_stores_a_token(tmp_path: Path) -> None:
    dc = served_home(tmp_path)
    good = dc.token_issue(SENDER, "operator").token
    wrong = "dvc_" + "Z" * 40
    with serving(tmp_path, dc.layout.root) as server:
        api = server.line("api")
        with httpx.Client(timeout=30) as c:
            ok = c.post(f"{api}/entities/{ENTITY}/messages", json={"subject": "hi"},
                        headers={"Authorization": f"Bearer {good}"})
            assert ok.status_code == 201, ok.text
            for header in (f"Bearer {wrong}", f"Bearer {good}\x7f", f"Token {good}"):
                r = c.get(f"{api}/doctor", headers={"Authorization": header})
                assert good not in r.text and wrong not in r.text
            c.post(f"{server.url}/mcp", headers={"Authorization": f"Bearer {wrong}"}, json={"jsonrpc": "2.0"})
        server.proc.send_signal(signal.SIGINT)
        out, err = server.proc.communicate(timeout=30)
        printed = "\n".join(server.lines) + out.decode(errors="replace") + err.decode(errors="replace")
    assert good not in printed and wrong not in printed, printed
    for name, data in snapshot(dc.layout.root).items():
        assert good.encode() not in data and wrong.encode() not in data, name
