"""The import graph points one way, layer by layer: faces -> handle -> ops -> derive / store -> roster ->
ledger -> model -> util (DESIGN 7), and the folders are the layers (``LAYERS``).

Every module under ``src/dovecote`` is parsed with ``ast`` (never imported), and
every import counts wherever it is written: at the top, inside a function, under
``TYPE_CHECKING``, relative, or through ``importlib.import_module("...")``. A
use case also never reads the environment or the wall clock: the actor and the
clock come from its ``Context``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "dovecote"

#: What the CLI may import besides its own modules: the handle, its typed verb inputs and two leaf helpers.
CLI_MAY_IMPORT = frozenset(
    {"dovecote", "dovecote.handle.api", "dovecote.handle.search", "dovecote.handle.inbox", "dovecote.errors",
     "dovecote.model.textsafe", "dovecote._version", "dovecote.verbs",
     "dovecote.model.results",  # the one encoding of a handle's typed answer (a leaf, as errors)
     # the one file-operations module (a leaf): the few files a face writes itself (the hook log, the
     # output cache, a login link burnt) go through it like every other write
     "dovecote.util.fileops"}
)
#: What the MCP face may import besides its own modules: the handle, the typed verbs and the errors.
MCP_MAY_IMPORT = frozenset({"dovecote", "dovecote.handle.api", "dovecote.errors", "dovecote._version", "dovecote.verbs",
                            "dovecote.model.results",  # the one encoding of a handle's typed answer
                            "dovecote.handle.remote", "dovecote.handle.remote_leases",
                            # the agent-mail profile's calls: its remote (every one through ``remote``)
                            "dovecote.handle.agentmail", "dovecote.handle.agentmail_mail",
                            "dovecote.handle.agentmail_leases",
                            "dovecote.model.textsafe",  # every tool's text line made one escaped line, as the CLI's
                            "dovecote.http.runner",  # the bounded thread pool both servers' faces share
                            "dovecote.http.headers",  # the headers every answer of the server carries
                            "dovecote.http.shield"})  # the request limits and error shape both servers keep
#: What Gas City's mail provider may import besides its own modules: the handle's mailboxes, the handle, the
#: home's making (its first use makes it), the typed verbs and the errors.
GC_MAY_IMPORT = frozenset({"dovecote", "dovecote.handle.api", "dovecote.handle.mailbox", "dovecote.handle.home",
                           "dovecote.verbs", "dovecote.errors"})
#: The CLI runs the MCP face (``dovecote mcp``), as ``serve`` runs the web faces.
CLI_MAY_RUN = frozenset({"dovecote.mcp", "dovecote.mcp.server", "dovecote.mcp.http", "dovecote.mcp.agentmail"})
#: The one exception: the cached-rendering path finds the home, keys its entry (the one SHA-256 that
#: skips hashlib's import) and writes it (one temp-name rule) before anything heavy loads.
CLI_EXCEPTIONS = {
    "dovecote.cli.output_cache": frozenset({"dovecote.roster.home", "dovecote.util.osutil", "dovecote.util.digests"}),
    # `serve` starts the HTTP face: the one command that stands a second face up.
    "dovecote.cli.cmd_serve": frozenset({"dovecote.http", "dovecote.http.app", "dovecote.http.session",
                                         "dovecote.http.shield"}),
}
#: What the HTTP face may import besides its own modules: the same handle and leaf helpers as the CLI, and
#: ``remote``, the calls a remote caller makes (shared with MCP: one authorization rule).
HTTP_MAY_IMPORT = CLI_MAY_IMPORT | {"dovecote.handle.remote",
                                    "dovecote.handle.remote_leases",  # the lease calls and their answers' types
                                    "dovecote.handle.moves",  # the lifecycle table's moves a page offers
                                    "dovecote.model.vocab"}  # the closed vocabularies a page filters by


#: The layers, bottom to top: each a package (or a module) and the layers it may import besides its own. The
#: package root (``dovecote``: lazy names only) anyone may import. ``docs/architecture.md`` is drawn from this
#: table and each package's docstring (``test_docs``), so the map a newcomer reads cannot drift from the code.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("dovecote._version", ()),
    ("dovecote.errors", ()),
    ("dovecote.util", ()),
    ("dovecote.model", ("dovecote.util", "dovecote.errors")),
    ("dovecote.verbs", ("dovecote.model", "dovecote.util", "dovecote.errors")),
    ("dovecote.ledger", ("dovecote.model", "dovecote.util", "dovecote.errors")),
    ("dovecote.roster", ("dovecote.ledger", "dovecote.model", "dovecote.util", "dovecote.errors")),
    ("dovecote.derive", ("dovecote.roster", "dovecote.model", "dovecote.util", "dovecote.errors")),
    ("dovecote.store", ("dovecote.roster", "dovecote.ledger", "dovecote.model", "dovecote.util", "dovecote.errors")),
    ("dovecote.ops", ("dovecote.derive", "dovecote.store", "dovecote.roster", "dovecote.ledger", "dovecote.verbs",
                      "dovecote.model", "dovecote.util", "dovecote.errors")),
    ("dovecote.handle", ("dovecote.ops", "dovecote.derive", "dovecote.store", "dovecote.roster", "dovecote.ledger",
                         "dovecote.verbs", "dovecote.model", "dovecote.util", "dovecote.errors", "dovecote._version")),
    # the faces: what each reaches below the handle is narrowed further by its own list above (CLI_MAY_IMPORT, ...)
    ("dovecote.http", ("dovecote.handle", "dovecote.verbs", "dovecote.model", "dovecote.util", "dovecote.errors",
                       "dovecote._version")),
    ("dovecote.mcp", ("dovecote.http", "dovecote.handle", "dovecote.verbs", "dovecote.model", "dovecote.errors",
                      "dovecote._version")),
    ("dovecote.cli", ("dovecote.mcp", "dovecote.http", "dovecote.handle", "dovecote.verbs", "dovecote.roster",
                      "dovecote.model", "dovecote.util", "dovecote.errors", "dovecote._version")),
    ("dovecote.gc", ("dovecote.handle", "dovecote.verbs", "dovecote.errors")),
    ("dovecote.__init__", ("dovecote.handle", "dovecote.errors", "dovecote._version")),
    ("dovecote.__main__", ("dovecote.cli",)),
)
#: The faces: nothing below the handle imports one.
FACES = ("dovecote.cli", "dovecote.http", "dovecote.mcp", "dovecote.gc")


def layer_of(name: str) -> str:
    """The layer a module belongs to: the longest entry of ``LAYERS`` it is, or is under."""
    found = [layer for layer, _ in LAYERS if name == layer or name.startswith(layer + ".")]
    if not found:
        raise AssertionError(f"{name} is in no layer: add its package to LAYERS")
    return max(found, key=len)


#: What reads the environment or the wall clock (module attribute, or name imported from it).
AMBIENT = {
    "os": frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}),
    "datetime": frozenset({"now", "utcnow", "today"}),
    "date": frozenset({"today"}),
    "time": frozenset({"time", "time_ns"}),
}
STREAMS = frozenset({"stdin", "stdout", "stderr"})


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    return ".".join(rel.parts)


def _is_module(name: str) -> bool:
    p = SRC.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _resolve(module: str, level: int, here: str, is_package: bool) -> str:
    """The absolute name of ``from <level dots><module> import ...`` written in module ``here``."""
    if level == 0:
        return module
    parts = here.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def imports_of(source: str, here: str, is_package: bool = False) -> set[str]:
    """Every module ``source`` imports, wherever the import is written."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node.module or "", node.level, here, is_package)
            modules = {f"{target}.{a.name}" for a in node.names if _is_module(f"{target}.{a.name}")}
            # ``from package import module`` imports the module (and runs the package's docstring-only
            # ``__init__``); any other name imported is the target's own
            if len(modules) < len(node.names):
                found.add(target)
            found.update(modules)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def ambient_reads(source: str) -> list[str]:
    """Each ``os.environ``, ``datetime.now``, ``time.time`` (and the like) the source names,
    and each ``print`` or standard stream it writes to (ops return values, never text)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id == "print":
            found.append(f"print (line {node.lineno})")
        elif isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "sys" and node.attr in STREAMS:
            found.append(f"sys.{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.Attribute):
            owner = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", None)
            if node.attr in AMBIENT.get(owner or "", ()):
                found.append(f"{owner}.{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and node.module in AMBIENT:
            found += [f"from {node.module} import {a.name} (line {node.lineno})"
                      for a in node.names if a.name in AMBIENT[node.module]]
    return found


def _modules() -> dict[str, tuple[Path, set[str]]]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        out[name] = (path, imports_of(path.read_text(), name, path.name == "__init__.py"))
    return out


MODULES = _modules()


def _under(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _breaking(rule: str, test: Callable[[str, str], bool]) -> list[str]:
    bad = [f"{name} imports {imp}" for name, (_, imps) in MODULES.items() for imp in sorted(imps) if test(name, imp)]
    return [f"{rule}: {b}" for b in bad]


def test_the_scan_sees_every_package() -> None:
    names = set(MODULES)
    assert {"dovecote.handle.api", "dovecote.ops.context", "dovecote.cli.app", "dovecote.ops.mail.send",
            "dovecote.derive.fates"} <= names


def test_every_module_imports_only_its_own_layer_and_the_layers_under_it() -> None:
    """The one rule, from ``LAYERS``: a module under ``derive/`` imports nothing from ``ops/``, ``store/``,
    ``ledger/``, ``handle/`` or a face; nothing below the handle imports it, ``ops/`` or a face; and so on."""
    may = dict(LAYERS)

    def upward(name: str, imp: str) -> bool:
        if not _under(imp, "dovecote") or imp == "dovecote":
            return False
        mine, theirs = layer_of(name), layer_of(imp)
        return theirs != mine and theirs not in may[mine]

    assert _breaking("imports up or across a layer", upward) == []


def test_the_layer_rule_sees_an_import_up_a_layer() -> None:
    """The rule itself: derive reaching into ops or the store, or the store into the handle, is caught."""
    may = dict(LAYERS)
    for name, imp in [("dovecote.derive.fates", "dovecote.ops.context"), ("dovecote.derive.fates", "dovecote.store"),
                      ("dovecote.store.core", "dovecote.handle.api"), ("dovecote.model.letters", "dovecote.ledger"),
                      ("dovecote.ops.mail.send", "dovecote.cli.app")]:
        assert layer_of(imp) not in may[layer_of(name)], (name, imp)


def test_the_package_root_holds_only_the_entry_points_and_the_errors() -> None:
    """Every other module lives in the folder of its layer."""
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py", "_version.py", "errors.py"]


#: The most lines a module of the package may have: one concern a module, read in one sitting (STYLE: Starlette's
#: and httpx's small modules). A module that grows past it is split where a reader would look for the half.
MAX_LINES = 400
#: Modules that may be longer, each with why it cannot be split: none today.
LONG_MODULES: dict[str, str] = {}


def long_modules(paths: dict[str, Path], limit: int = MAX_LINES) -> list[str]:
    """``name: lines`` of each module over ``limit`` lines that ``LONG_MODULES`` does not name."""
    counts = {name: len(path.read_text().splitlines()) for name, path in paths.items()}
    return [f"{name}: {n} lines" for name, n in sorted(counts.items()) if n > limit and name not in LONG_MODULES]


def test_every_module_is_under_400_lines() -> None:
    """Every module of ``src/dovecote`` stays at most ``MAX_LINES`` long (or is named, with why, in
    ``LONG_MODULES``), and every exception named is still a module that needs it."""
    assert long_modules({name: path for name, (path, _) in MODULES.items()}) == []
    stale = [name for name in LONG_MODULES if name not in MODULES
             or len(MODULES[name][0].read_text().splitlines()) <= MAX_LINES]
    assert stale == []


def test_the_line_count_sees_a_long_module(tmp_path: Path) -> None:
    short, long = tmp_path / "short.py", tmp_path / "long.py"
    short.write_text("x = 1\n" * MAX_LINES)
    long.write_text("x = 1\n" * (MAX_LINES + 1))
    assert long_modules({"short": short, "long": long}) == [f"long: {MAX_LINES + 1} lines"]


def test_no_package_init_does_work() -> None:
    """An ``__init__`` below the root is a docstring: importing a package loads nothing on a cold start. The one
    namespace that is its package's public face is ``verbs`` (every verb and the vocabularies their fields take)."""
    heavy = [f"{name} imports {imp}" for name, (path, imps) in MODULES.items()
             if path.name == "__init__.py" and name not in ("dovecote.__init__", "dovecote.verbs.__init__")
             for imp in imps]
    assert heavy == []


def test_the_cli_imports_only_the_handle_and_its_own_modules() -> None:
    def outside(name: str, imp: str) -> bool:
        if not _under(name, "dovecote.cli") or not _under(imp, "dovecote") or _under(imp, "dovecote.cli"):
            return False
        return imp not in CLI_MAY_IMPORT | CLI_MAY_RUN and imp not in CLI_EXCEPTIONS.get(name, frozenset())

    assert _breaking("cli goes around the handle", outside) == []


def test_the_http_face_imports_only_the_handle_and_its_own_modules() -> None:
    def outside(name: str, imp: str) -> bool:
        if not _under(name, "dovecote.http") or not _under(imp, "dovecote") or _under(imp, "dovecote.http"):
            return False
        return imp not in HTTP_MAY_IMPORT

    assert _breaking("http goes around the handle", outside) == []


def test_the_gc_face_imports_only_the_handle_and_its_own_modules() -> None:
    def outside(name: str, imp: str) -> bool:
        if not _under(name, "dovecote.gc") or not _under(imp, "dovecote") or _under(imp, "dovecote.gc"):
            return False
        return imp not in GC_MAY_IMPORT

    assert {"dovecote.gc.main", "dovecote.gc.operations", "dovecote.gc.wire"} <= set(MODULES)
    assert _breaking("gc goes around the handle", outside) == []


def test_the_http_face_is_scanned() -> None:
    assert {"dovecote.http.app", "dovecote.http.rest", "dovecote.http.events", "dovecote.http.pages"} <= set(MODULES)


def test_the_mcp_face_imports_only_the_handle_the_verbs_and_its_own_modules() -> None:
    def outside(name: str, imp: str) -> bool:
        if not _under(name, "dovecote.mcp") or not _under(imp, "dovecote") or _under(imp, "dovecote.mcp"):
            return False
        return imp not in MCP_MAY_IMPORT

    assert any(_under(n, "dovecote.mcp") for n in MODULES)
    assert _breaking("mcp goes around the handle", outside) == []


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle of ``graph``: its strongly connected components of more than one module, each sorted
    (Tarjan's algorithm, iterative: no recursion limit however deep the chains)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, nexts = work[-1]
            nxt = next(nexts, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return sorted(cycles)


def test_the_import_graph_has_no_cycle() -> None:
    """No module imports, however indirectly, one that imports it back: counting every import as
    ``imports_of`` finds it (in a function, under ``TYPE_CHECKING``), so a cycle is not hidden by
    making one of its imports lazy. An import of a package's module (``from dovecote.util import fileops``)
    counts as one of the module it names, not of the package's ``__init__``."""
    graph = {name: {imp for imp in imps if imp in MODULES and imp != name} for name, (_, imps) in MODULES.items()}
    cycles = import_cycles(graph)
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_names_each_cycle_once() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": {"e"}, "g": {"g"}}
    assert import_cycles(graph) == [["a", "b", "c"], ["e", "f"]]


def test_no_op_reads_the_environment_or_the_wall_clock_or_prints() -> None:
    """The context (``ops.context``) is where the clock and the actor are read, once, and handed to every op."""
    bad = [f"{name}: {read}" for name, (path, _) in MODULES.items()
           if _under(name, "dovecote.ops") and name != "dovecote.ops.context"
           for read in ambient_reads(path.read_text())]
    assert bad == []


# -- the scanner itself: it must see what a careless change would write ---------

@pytest.mark.parametrize("source", [
    "from dovecote.handle.api import Dovecote",
    "import dovecote.handle.api",
    "from dovecote.handle import api",
    "def f():\n    from dovecote.handle.api import Dovecote\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dovecote.handle.api import Dovecote\n",
    "from ..handle import api",
    "from ..cli import app",
    "import importlib\nimportlib.import_module('dovecote.handle.api')",
])
def test_the_scanner_sees_an_upward_import_however_it_is_written(source: str) -> None:
    found = imports_of(source, "dovecote.ops.somewhere")
    assert any(_under(i, "dovecote.handle.api", "dovecote.cli") for i in found), found


@pytest.mark.parametrize("source", [
    "import os\nos.environ.get('X')",
    "import os\nos.getenv('X')",
    "from os import environ",
    "from datetime import datetime\ndatetime.now()",
    "import datetime\ndatetime.datetime.now()",
    "from datetime import UTC, datetime\ndef f():\n    return datetime.now(UTC)\n",
    "import time\ntime.time()",
    "print('hello')",
    "import sys\nsys.stdout.write('hello')",
])
def test_the_scanner_sees_an_ambient_read_or_a_print(source: str) -> None:
    assert ambient_reads(source)


def test_the_scanner_lets_the_context_clock_through() -> None:
    assert ambient_reads("def f(dc):\n    return dc.now(), dc.actor.agent, dc.clock()\n") == []


# -- the map a newcomer reads (docs/architecture.md), drawn from LAYERS ----------

def _first_line(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return " ".join(doc.split("\n\n")[0].split())


def render_map() -> str:
    """The layer table as Markdown: one row a layer (bottom first), then one line a package under it."""
    rows = ["| layer | where | what it is | may import |", "|---|---|---|---|"]
    for layer, may in LAYERS:
        rel = layer.removeprefix("dovecote").lstrip(".").replace(".", "/")
        folder = PACKAGE / rel if rel else PACKAGE
        path = folder / "__init__.py" if folder.is_dir() else folder.with_suffix(".py")
        where = f"`{rel}/`" if folder.is_dir() else f"`{path.name}`"
        what = _first_line(path).replace("|", "\\|")
        names = ", ".join(f"`{m.removeprefix('dovecote.')}`" for m in may) or "nothing"
        rows.append(f"| {layer.removeprefix('dovecote.')} | {where} | {what} | {names} |")
    subs = ["", "Inside the layers, one folder a feature:", ""]
    for init in sorted(PACKAGE.rglob("__init__.py")):
        folder = init.parent
        depth = len(folder.relative_to(PACKAGE).parts)
        if depth >= 2 and not any(part in ("templates", "static") for part in folder.parts):
            subs.append(f"- `{folder.relative_to(PACKAGE)}/`: {_first_line(init)}")
    return "\n".join(rows + subs) + "\n"


def test_every_layer_says_what_it_is() -> None:
    """Each package of the map has a docstring (its line on the map)."""
    assert "|  |" not in render_map() and ": \n" not in render_map()
