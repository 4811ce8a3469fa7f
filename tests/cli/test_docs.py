"""Docs that cannot drift: the README stays a short front door, the cog-drawn architecture page matches the code,
and no source, page or help text cites a tracker number. (The site's generated references are checked by
building it: ``tests/docs/test_site.py``.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_the_architecture_page_is_current() -> None:
    """`cog --check` fails when the layer table changed without its page."""
    cog = Path(sys.executable).parent / "cog"
    res = subprocess.run([str(cog), "--check", "docs/architecture.md"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, f"docs/architecture.md is stale; run `.venv/bin/cog -r docs/architecture.md`\n" \
                                f"{res.stdout}{res.stderr}"


def test_the_readme_is_a_front_door() -> None:
    """What it is, the two commands, the tour, and links into the site: no reference copied into it."""
    assert "make run" in README and "make test" in README
    assert len(README.splitlines()) <= 250
    assert "[[[cog" not in README  # generated references live on the site, built from the code
    for page in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / page).is_file(), f"the README links to {page}, which is not there"


def test_no_source_page_or_help_cites_a_tracker_number() -> None:
    """Comments, docstrings, --help and the site say the rule itself: a reader of this repository has no tracker
    to look "issue 9" up in (the site's CLI reference is built from the help texts in src/, so it is checked)."""
    cite = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
    paths = [*sorted((ROOT / "src").rglob("*.py")), *sorted((ROOT / "docs").rglob("*.md")),
             *sorted((ROOT / "sitegen").rglob("*.py")), ROOT / "README.md", ROOT / "mkdocs.yml"]
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for path in paths for n, line in enumerate(path.read_text().splitlines(), 1) if cite.search(line)]
    assert found == [], "\n".join(found)
