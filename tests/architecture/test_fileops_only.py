"""Every file write goes through ``dovecote.util.fileops`` (DESIGN 1.5, issue 13).

The crash-point sweeps (``tests/crash/test_crash_*.py``) can only crash what they see:
a module that calls ``os.replace`` or ``open(path, "w")`` itself writes past the
fault-injecting layer, and its crash points are never run. Every module under
``src/dovecote`` is parsed with ``ast`` (never imported) and each call of a write
primitive outside ``fileops`` fails this test, with where it is. Reading stays
free: ``open`` for reading, ``os.open`` with ``O_RDONLY`` alone, ``os.fdopen``
of such a descriptor.
"""

from __future__ import annotations

import ast

from test_architecture import PACKAGE, SRC, module_name

#: The module every write goes through.
HOME = "dovecote.util.fileops"
#: Write primitives by module: ``os.replace(...)``, or ``from os import replace`` then ``replace(...)``.
PRIMITIVES = {
    "os": frozenset({"write", "pwrite", "writev", "fsync", "fdatasync", "ftruncate", "truncate", "replace",
                     "rename", "renames", "link", "symlink", "mkdir", "makedirs", "unlink", "remove", "rmdir",
                     "removedirs", "mkfifo", "mknod"}),
    "shutil": frozenset({"rmtree", "move", "copy", "copy2", "copyfile", "copytree", "copyfileobj"}),
    "tempfile": frozenset({"mkstemp", "NamedTemporaryFile", "TemporaryFile", "SpooledTemporaryFile"}),
}
#: ``pathlib.Path`` methods that write (``replace`` and ``rename`` only with one positional argument and no
#: keywords, so ``str.replace(a, b)`` and ``datetime.replace(microsecond=0)`` are not taken for them).
PATH_WRITES = frozenset({"mkdir", "write_text", "write_bytes", "unlink", "rmdir", "touch", "symlink_to",
                         "hardlink_to"})
PATH_MOVES = frozenset({"replace", "rename"})
#: Flags of ``os.open`` that make it a write (a lock file's ``O_CREAT`` too: it makes a name).
WRITE_FLAGS = frozenset({"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND", "O_EXCL"})
#: Writers that cannot come through ``fileops``, each with why.
JUSTIFIED: dict[tuple[str, str], str] = {
    # `serve --workers` shares burnt login links through a private folder in /tmp, outside every home;
    # it is removed through fileops when the server stops
    ("dovecote.cli.cmd_serve", "tempfile.mkdtemp"): "a private folder outside the home, for one server's life",
    # a gesture asks whether this process has a controlling terminal to type the passphrase at: it opens
    # /dev/tty read-write (as getpass will) and closes it at once, writing nothing
    ("dovecote.cli.cmd_gestures", "os.open for writing"): "the controlling terminal, opened to see that one exists",
}


def _flag_names(node: ast.AST) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)} | {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _mode_writes(call: ast.Call, position: int) -> bool:
    """Whether the mode argument of ``open``/``fdopen`` (a literal) opens for writing."""
    mode: ast.AST | None = call.args[position] if len(call.args) > position else None
    for kw in call.keywords:
        if kw.arg == "mode":
            mode = kw.value
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return True  # a mode computed at run time: assume the worst


def writes_in(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for every write primitive called in ``tree``."""
    imported: dict[str, str] = {}  # local name -> "module.name", for ``from os import replace``
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in PRIMITIVES:
            for a in node.names:
                if a.name in PRIMITIVES[node.module] or a.name in ("open", "fdopen", "mkdtemp"):
                    imported[a.asname or a.name] = f"{node.module}.{a.name}"
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        what: str | None = None
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in PRIMITIVES:
            name = f"{f.value.id}.{f.attr}"
            if f.attr in PRIMITIVES[f.value.id] or name == "tempfile.mkdtemp":
                what = name
            elif name == "os.open" and len(node.args) > 1 and _flag_names(node.args[1]) & WRITE_FLAGS:
                what = "os.open for writing"
            elif name == "os.fdopen" and _mode_writes(node, 1):
                what = "os.fdopen for writing"
        elif isinstance(f, ast.Name) and f.id in imported:
            what = imported[f.id]
        elif isinstance(f, ast.Name) and f.id == "open" and _mode_writes(node, 1):
            what = "open for writing"
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "fileops":
            continue  # the way every write should go
        elif isinstance(f, ast.Attribute) and f.attr in PATH_WRITES:
            what = f"Path.{f.attr}"
        elif (isinstance(f, ast.Attribute) and f.attr == "open" and _mode_writes(node, 0)
              and any(isinstance(a, ast.Constant) for a in [*node.args[:1], *(k.value for k in node.keywords)])):
            what = "Path.open for writing"  # ``Context.open(layout)`` is no file: only a literal mode counts
        elif (isinstance(f, ast.Attribute) and f.attr in PATH_MOVES and len(node.args) == 1
              and not node.keywords and not isinstance(node.args[0], ast.Constant)):
            what = f"Path.{f.attr}"
        if what is not None:
            found.append((node.lineno, node.col_offset, what))
    return [(line, what) for line, _, what in sorted(found)]


def test_every_write_under_src_goes_through_fileops() -> None:
    stray = []
    for path in sorted(PACKAGE.rglob("*.py")):
        mod = module_name(path)
        if mod == HOME:
            continue
        for line, what in writes_in(ast.parse(path.read_text(), str(path))):
            if (mod, what) not in JUSTIFIED:
                stray.append(f"{path.relative_to(SRC)}:{line}: {what}")
    assert stray == [], "write through dovecote.util.fileops instead (or justify it in JUSTIFIED):\n" + "\n".join(stray)


def test_the_scan_sees_each_kind_of_write() -> None:
    """The scan itself: each way of writing a file is caught, and reads and look-alikes are not."""
    caught = """
import os, shutil
from os import replace as mv
os.replace(a, b); mv(a, b); shutil.rmtree(p); open(p, "wb"); open(p, mode="a"); p.write_bytes(b"x")
os.open(p, os.O_WRONLY | os.O_CREAT); os.open(p, os.O_RDWR | os.O_CREAT, 0o644); p.mkdir(); p.unlink()
p.replace(q); p.rename(q); os.fdopen(fd, "w"); p.open("w"); open(p, m)
"""
    assert [w for _, w in writes_in(ast.parse(caught))] == [
        "os.replace", "os.replace", "shutil.rmtree", "open for writing", "open for writing",
        "Path.write_bytes", "os.open for writing", "os.open for writing", "Path.mkdir", "Path.unlink",
        "Path.replace", "Path.rename", "os.fdopen for writing", "Path.open for writing", "open for writing",
    ]
    free = """
import os
open(p, "rb"); open(p); os.open(p, os.O_RDONLY | os.O_NOFOLLOW); os.fdopen(fd, "rb"); p.read_bytes()
s.replace("a", "b"); t.replace(microsecond=0); s.replace(b"\\n", b" "); p.open("rb")
"""
    assert writes_in(ast.parse(free)) == []


def test_the_justified_writers_still_exist() -> None:
    """An entry in JUSTIFIED whose write is gone is removed, so the list never outlives its reasons."""
    seen = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        seen |= {(module_name(path), what) for _, what in writes_in(ast.parse(path.read_text(), str(path)))}
    assert set(JUSTIFIED) <= seen, set(JUSTIFIED) - seen
