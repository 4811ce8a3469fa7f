"""The documentation site builds with ``mkdocs build --strict`` and its references cover the code.

The build is a real ``mkdocs`` process into a temporary folder, as ``make docs`` and a reader's build run it:
a broken link or anchor, a page missing from the nav or a generated section the hooks do not know fails it.
The generated pages are then read as a reader's browser gets them: every command and option of the CLI,
every REST route, every MCP tool of every role, every refusal keyword and every lifecycle move has its
entry, and no page loads a script or a stylesheet from another server (the site works offline).
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # sitegen/ sits beside src/: the site's build, not part of the package


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).parent / "mkdocs"
    r = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(out)], cwd=ROOT, capture_output=True,
                       text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "WARNING" not in r.stderr, r.stderr[-3000:]
    return out


def page(site: Path, name: str) -> str:
    return (site / name).read_text()


def ids(text: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', text))


def _commands(cmd: object, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    out = [(path, cmd)] if path else []
    for name, sub in getattr(cmd, "commands", {}).items():
        out += _commands(sub, (*path, name))
    return out


def test_every_command_and_option_has_a_reference_entry(site: Path) -> None:
    from dovecote.cli.app import app

    text = page(site, "reference/cli.html")
    anchors = ids(text)
    commands = _commands(typer.main.get_command(app))
    assert len(commands) > 10
    plain = html.unescape(re.sub(r"<[^>]+>", "", text))
    for path, cmd in commands:
        anchor = "-".join(("dovecote", *path))
        assert anchor in anchors, f"dovecote {' '.join(path)} has no entry (#{anchor}) in the CLI reference"
        section = plain.split(f"dovecote {' '.join(path)}", 1)[1]
        for param in getattr(cmd, "params", []):
            for opt in getattr(param, "opts", []):
                if opt.startswith("-") and not getattr(param, "hidden", False):
                    assert opt in section, f"dovecote {' '.join(path)}: option {opt} is not in the CLI reference"


def test_every_route_has_a_reference_entry(site: Path) -> None:
    from sitegen.reference import anchor

    from dovecote.http.rest import ROUTES

    anchors = ids(page(site, "reference/rest.html"))
    for r in ROUTES:
        assert anchor(r.method, r.template) in anchors, f"{r.method} {r.template} has no entry in the REST reference"
    assert "get-events" in anchors  # the event stream is in the OpenAPI too


def test_every_mcp_tool_of_every_role_has_a_reference_entry(site: Path) -> None:
    from dovecote.mcp.server import tokens
    from dovecote.mcp.tools import ROLES, catalog

    text = page(site, "reference/mcp.html")
    anchors = ids(text)
    for role in ROLES:
        assert f"catalog-{role}" in anchors
        assert f"{tokens(role):,}" in text  # the role's token count, as the budget test counts it
        for tool in catalog(role):
            assert f"tool-{tool.name}" in anchors, f"MCP tool {tool.name} has no entry in the MCP reference"
            for view in getattr(tool, "views", ()):
                assert f"<code>{view.name}</code>" in text


def test_every_refusal_keyword_has_a_reference_entry(site: Path) -> None:
    from dovecote.errors import REASONS

    text = page(site, "reference/errors.html")
    anchors = ids(text)
    for keyword, (status, _) in REASONS.items():
        assert keyword in anchors, f"refusal keyword {keyword} has no entry in the errors reference"
        row = text.split(f'id="{keyword}"', 1)[1].split("</tr>", 1)[0]
        assert f"<td>{status}</td>" in row and "<td>2</td>" in row  # its HTTP status, and the CLI's exit 2


def test_the_lifecycle_page_is_drawn_from_the_table(site: Path) -> None:
    from dovecote.derive.lifecycle import TRANSITIONS

    text = page(site, "concepts/lifecycle.html")
    assert 'class="dovecote-lifecycle"' in text
    for state, moves in TRANSITIONS.items():
        assert f">{state}</text>" in text  # a box in the diagram
        for kind, target in moves.items():
            assert f"<td><code>{state}</code></td>\n<td><code>{kind}</code></td>\n<td><code>{target}</code></td>" \
                in text, f"{state} --{kind}--> {target} is not on the lifecycle page"


def test_the_site_loads_nothing_from_another_server(site: Path) -> None:
    """No CDN: every script, stylesheet, font and image comes with the site (links in prose may point out)."""
    outside = re.compile(r"<(script|link|img|iframe)\b[^>]*\b(src|href)=\"(https?:)?//", re.IGNORECASE)
    imports = re.compile(r"@import\s+(url\()?[\"']?(https?:)?//|url\([\"']?(https?:)?//", re.IGNORECASE)
    found = [f"{p.relative_to(site)}: {m.group(0)}" for p in sorted(site.rglob("*.html"))
             for m in outside.finditer(p.read_text())]
    found += [f"{p.relative_to(site)}: {m.group(0)}" for p in sorted(site.rglob("*.css"))
              for m in imports.finditer(p.read_text())]
    assert found == [], "\n".join(found)


def test_no_built_page_cites_a_tracker_number(site: Path) -> None:
    """What the hooks draw in (help texts, bench/README.md's figures) is held to the pages' rule too."""
    cite = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
    found = [f"{p.relative_to(site)}: {m.group(0)}" for p in sorted(site.rglob("*.html"))
             for m in cite.finditer(html.unescape(re.sub(r"<[^>]+>", "", p.read_text())))]
    assert found == [], "\n".join(found)


def test_a_page_naming_an_unknown_generated_section_fails_the_build() -> None:
    from sitegen.hooks import UnknownSection, on_page_markdown

    class Page:
        class file:  # the shape of MkDocs' page.file
            src_path = "reference/x.md"

    assert "| `stale_head` |" not in on_page_markdown("no marker", Page(), None, None)
    with pytest.raises(UnknownSection, match="no generated section 'rest-route'"):
        on_page_markdown("<!-- dovecote:rest-route -->", Page(), None, None)
