"""Mutation testing of the core: does each module's own test file pin what the module does?

Two halves, both run one module at a time against only that module's own tests (the file a
reader would look in), so a mutant killed somewhere far away still counts as surviving here:

* ``functions``: mutmut 3 over the module's function bodies. mutmut reads its settings from the
  ``pyproject.toml`` of the folder it runs in, so each module gets a folder of its own under
  ``mutation/out/`` with a generated ``pyproject.toml`` and links to ``src/`` and ``tests/``;
  its results stay there between runs (mutmut re-runs only what has no result yet).
* ``tables``: mutmut leaves module-level tables alone (``lifecycle.TRANSITIONS``, ``PROGRESS``,
  ``letters.CANONICAL_ORDER``...), and a table is where a rule is most easily changed by one edit.
  So this driver perturbs one entry at a time in a copy of ``src/`` (an int one up or down, a
  value swapped for another value of the same table, an entry dropped, two neighbours swapped)
  and runs the module's tests over the copy.

The score is killed / (killed + survived), with the mutants listed in ``equivalents.txt``
(each with one line of why) left out of both. ``TARGETS`` is the one place that names files:
when the package moves, only its paths change.

    python mutation/mutate.py [functions|tables|all] [module ...] [--max-children N]
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "mutation" / "out"
EQUIVALENTS = ROOT / "mutation" / "equivalents.txt"


@dataclass(frozen=True)
class Target:
    source: str  # the module's file, from the repository root
    tests: tuple[str, ...]  # its own test files
    tables: tuple[str, ...] = ()  # its module-level tables, by name
    unordered: tuple[str, ...] = ()  # tables read only for membership: swapping two entries changes nothing


LEDGER_TESTS = (
    "tests/ledger/test_ledger_properties.py", "tests/ledger/test_durability.py", "tests/ledger/test_group_commit.py",
    "tests/ledger/test_append.py", "tests/ledger/test_jsonl.py",
)

TARGETS: dict[str, Target] = {
    "lifecycle": Target(
        "src/dovecote/derive/lifecycle.py",
        ("tests/derive/test_lifecycle.py",),
        ("TERMINAL", "PROGRESS", "TRANSITIONS", "ARCHIVING", "_NOT_MOVES"),
    ),
    "fates": Target("src/dovecote/derive/fates.py", ("tests/derive/test_fates.py",), ("_NOT_RECEIPT",)),
    "trackers": Target(
        "src/dovecote/derive/delivery/trackers.py", ("tests/derive/test_trackers.py",), ("NOTICES", "_ENGINE_KINDS"),
        ("_ENGINE_KINDS",),
    ),
    "cases": Target(
        "src/dovecote/derive/cases/book.py", ("tests/derive/test_cases_fold.py",), ("ENGINE_KINDS",)
    ),
    # the ledger's own tests: its properties, the writer's durability and edges, the reader's helpers, the group
    # commit (not the crash sweeps, which kill real processes: minutes per mutant)
    "ledger": Target("src/dovecote/ledger/jsonl.py", LEDGER_TESTS, ("WINDOW", "ABSENT")),
    "ledger_append": Target("src/dovecote/ledger/append.py", LEDGER_TESTS),
    "letters": Target(
        "src/dovecote/model/letters.py", ("tests/model/test_letters.py",), ("CANONICAL_ORDER", "_STR_FIELDS"),
        ("_STR_FIELDS",),
    ),
    "routing": Target("src/dovecote/roster/routing.py", ("tests/roster/test_routing.py",)),
}


def module_name(source: str) -> str:
    return source.removeprefix("src/").removesuffix(".py").replace("/", ".")


def equivalents() -> set[str]:
    """The mutant names in ``equivalents.txt`` (first word of each line; ``#`` starts a comment)."""
    if not EQUIVALENTS.exists():
        return set()
    lines = (line.split() for line in EQUIVALENTS.read_text().splitlines() if not line.startswith("#"))
    return {words[0] for words in lines if words}


def score(name: str, kind: str, results: dict[str, str]) -> dict[str, object]:
    """Count one module's results (mutant name -> killed/survived/...), equivalents left out."""
    skip = equivalents()
    def dead(status: str) -> bool:
        return status.split(":", 1)[0] in ("killed", "timeout")

    unrun = sorted(m for m, s in results.items() if s == "not checked")  # a run stopped early: no score for them
    killed = sorted(m for m, s in results.items() if dead(s) and m not in skip)
    survived = sorted(m for m, s in results.items() if not dead(s) and m not in skip and m not in unrun)
    total = len(killed) + len(survived)
    pct = round(100 * len(killed) / total) if total else 100
    print(f"{name} {kind}: {pct}% ({len(killed)} killed, {len(survived)} survived, "
          f"{sum(m in skip for m in results)} equivalent" + (f", {len(unrun)} not run yet)" if unrun else ")"))
    for m in survived:
        print(f"  survived: {m} ({results[m]})")
    return {"module": name, "kind": kind, "score": pct, "killed": len(killed), "survived": survived}


# -- functions: mutmut 3 ------------------------------------------------------------------------


def run_functions(name: str, target: Target, max_children: int) -> dict[str, object]:
    work = OUT / name
    work.mkdir(parents=True, exist_ok=True)
    for link in ("src", "tests"):
        if not (work / link).exists():
            (work / link).symlink_to(ROOT / link)
    pytest_ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    settings = {
        "source_paths": ["src"],
        "only_mutate": [target.source],
        "pytest_add_cli_args_test_selection": list(target.tests),
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-p", "no:randomly"],
        # a mutant that loops forever costs (its tests' time + 1 s) x this x 2 CPU seconds before it
        # counts as killed: mutmut's 15 spent minutes on the fate fold's bisect loops (2026-12-05)
        "timeout_multiplier": 3.0,
    }
    text = "[tool.mutmut]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
    text += "\n[tool.pytest.ini_options]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in pytest_ini.items())
    (work / "pyproject.toml").write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [str(Path(sys.executable).parent / "mutmut"), "run", "--max-children", str(max_children)]
    before = _results(work, target)
    survived = before.get("survived", []) + before.get("no tests", [])
    subprocess.run(command, cwd=work, env=env, check=False)  # the mutants with no result yet
    if survived:  # mutmut keeps a result: named, it tries a survivor again (the tests may kill it now)
        subprocess.run([*command, *survived], cwd=work, env=env, check=False)
    results = {m: status for status, names in _results(work, target).items() for m in names}
    return score(name, "functions", results)


def _results(work: Path, target: Target) -> dict[str, list[str]]:
    """mutmut's last results for the module: status -> mutant names."""
    meta = work / "mutants" / (target.source + ".meta")
    if not meta.exists():
        return {}
    from mutmut.stats import status_by_exit_code  # only this half needs mutmut

    out: dict[str, list[str]] = {}
    for mutant, code in json.loads(meta.read_text())["exit_code_by_key"].items():
        out.setdefault(status_by_exit_code[code], []).append(mutant)
    return out


# -- tables: one entry at a time ----------------------------------------------------------------


def _values(node: ast.AST) -> list[str]:
    """The distinct leaf values of a table, as source text: what an entry may be swapped for."""
    if isinstance(node, ast.Dict):
        return sorted({t for v in node.values for t in _values(v)})
    if isinstance(node, (ast.Attribute, ast.Constant, ast.Name)):
        return [ast.unparse(node)]
    return []


def _int_value(node: ast.expr) -> int | None:
    """An integer literal's value (``-1`` is a minus applied to ``1``), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_value(node.operand)
        return None if inner is None else -inner
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _perturb(node: ast.expr, alternatives: list[str], ordered: bool = True) -> Iterator[tuple[str, ast.expr]]:
    """Every one-edit change of a table expression: (what changed, the new expression)."""
    number = _int_value(node)
    if number is not None:
        for d in (1, -1):
            yield f"{number}{d:+d}", ast.Constant(number + d)
    elif isinstance(node, (ast.Constant, ast.Attribute, ast.Name)):
        for alt in alternatives:
            if alt != ast.unparse(node):
                yield f"{ast.unparse(node)}->{alt}", ast.parse(alt, mode="eval").body
    elif isinstance(node, ast.Dict):
        inner = alternatives or _values(node)
        for i, (k, v) in enumerate(zip(node.keys, node.values, strict=True)):
            key = ast.unparse(k) if k is not None else "**"
            new = copy.deepcopy(node)
            del new.keys[i], new.values[i]
            yield f"drop {key}", new
            for what, changed in _perturb(v, inner):
                new = copy.deepcopy(node)
                new.values[i] = changed
                yield f"{key}: {what}", new
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for i, elt in enumerate(node.elts):
            fewer = copy.deepcopy(node)
            del fewer.elts[i]
            yield f"drop {ast.unparse(elt)}", fewer
            if ordered and not isinstance(node, ast.Set) and i + 1 < len(node.elts):
                swapped = copy.deepcopy(node)
                swapped.elts[i], swapped.elts[i + 1] = swapped.elts[i + 1], swapped.elts[i]
                yield f"swap {ast.unparse(elt)}/{ast.unparse(node.elts[i + 1])}", swapped
    elif isinstance(node, ast.Call):
        for i, arg in enumerate(node.args):
            for what, changed in _perturb(arg, alternatives, ordered):
                call = copy.deepcopy(node)
                call.args[i] = changed
                yield what, call
    elif isinstance(node, ast.BinOp):
        for side in ("left", "right"):
            for what, changed in _perturb(getattr(node, side), alternatives, ordered):
                op = copy.deepcopy(node)
                setattr(op, side, changed)
                yield what, op


def table_mutants(
    source: str, tables: tuple[str, ...], unordered: tuple[str, ...] = ()
) -> Iterator[tuple[str, str, str]]:
    """(mutant name, what it changes, the module's whole new source) for each one-edit change of each table."""
    lines = source.splitlines(keepends=True)

    def offset(line: int, col: int) -> int:  # ast columns count UTF-8 bytes
        return sum(map(len, lines[: line - 1])) + len(lines[line - 1].encode()[:col].decode())

    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            name, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            name, value = stmt.target.id, stmt.value
        else:
            continue
        if name not in tables or value.end_lineno is None or value.end_col_offset is None:
            continue
        start, end = offset(value.lineno, value.col_offset), offset(value.end_lineno, value.end_col_offset)
        for n, (what, new) in enumerate(_perturb(value, _values(value), name not in unordered), 1):
            yield f"{name}#{n}", what, source[:start] + ast.unparse(new) + source[end:]


def run_tables(name: str, target: Target) -> dict[str, object]:
    source = (ROOT / target.source).read_text()
    results: dict[str, str] = {}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix=f"mutate-{name}-") as tmp:
        shutil.copytree(ROOT / "src", Path(tmp) / "src")
        env["PYTHONPATH"] = str(Path(tmp) / "src")  # before the editable install's path
        mutated = Path(tmp) / target.source
        for mutant, what, text in table_mutants(source, target.tables, target.unordered):
            mutated.write_text(text)
            run = subprocess.run(
                [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *target.tests],
                cwd=ROOT, env=env, capture_output=True, check=False,
            )
            # 1: a test failed; any other failure (an import error, 2-4) kills it too; 0 and 5 do not
            status = "survived" if run.returncode in (0, 5) else "killed"
            results[f"{module_name(target.source)}:{mutant}"] = f"{status}: {what}"
        mutated.write_text(source)
    return score(name, "tables", results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("half", choices=("functions", "tables", "all", "scores"),
                        help="scores: count mutmut's kept results again (after equivalents.txt changed), run nothing")
    parser.add_argument("modules", nargs="*", help=f"any of {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--max-children", type=int, default=1)
    args = parser.parse_args()
    unknown = set(args.modules) - set(TARGETS)
    if unknown:
        parser.error(f"unknown module(s): {', '.join(sorted(unknown))}")
    OUT.mkdir(parents=True, exist_ok=True)
    kept = OUT / "scores.json"  # one line per (module, half), the latest run's
    scores = {(s["module"], s["kind"]): s for s in (json.loads(kept.read_text()) if kept.exists() else [])}
    for name in args.modules or list(TARGETS):
        target = TARGETS[name]
        if args.half == "scores" and _results(OUT / name, target):
            results = {m: status for status, names in _results(OUT / name, target).items() for m in names}
            scores[name, "functions"] = score(name, "functions", results)
        if args.half in ("functions", "all"):
            scores[name, "functions"] = run_functions(name, target, args.max_children)
        if args.half in ("tables", "all") and target.tables:
            scores[name, "tables"] = run_tables(name, target)
        kept.write_text(json.dumps(list(scores.values()), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
