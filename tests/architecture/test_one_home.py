"""One home for every rule: each rule below is defined once, and every other module imports it.

Each scan reads ``src/dovecote`` with ``ast`` (never imports it) and fails naming the
file and line where a second spelling of a rule appears. Each scanner also has a
test that feeds it the spelling it must catch, so a scan that went blind fails too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest

from dovecote import verbs
from dovecote.model.vocab import LetterKind, MoveKind, ReportClass

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "dovecote"
Scan = Callable[[ast.Module, str], Iterator[int]]


def _sources() -> dict[str, ast.Module]:
    return {p.relative_to(PACKAGE).as_posix(): ast.parse(p.read_text()) for p in sorted(PACKAGE.rglob("*.py"))}


SOURCES = _sources()


def offenders(scan: Scan, home: str) -> list[str]:
    """``file:line`` of each place ``scan`` finds, outside the rule's ``home``."""
    return [f"{rel}:{line}" for rel, tree in SOURCES.items() if rel != home for line in scan(tree, rel)]


def _calls(tree: ast.AST) -> Iterator[ast.Call]:
    return (n for n in ast.walk(tree) if isinstance(n, ast.Call))


def _name(func: ast.expr) -> str:
    """The called name: ``f`` of ``f(...)`` and of ``x.f(...)``."""
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


# -- the letter-id rule: ``ids`` ---------------------------------------------------------------

HEX_ID = re.compile(r"\[0-9a-f\]\{12\}")


def digest_cut(tree: ast.Module, rel: str) -> Iterator[int]:
    """``<hash>.hexdigest()[:12]`` (or ``[:ID_LENGTH]``): an id cut from a digest by hand, not by
    ``ids.line_id``. Other lengths (a 24-digit idempotency key, a 32-digit cache key) are other names."""
    for n in ast.walk(tree):
        if (isinstance(n, ast.Subscript) and isinstance(n.value, ast.Call) and _name(n.value.func) == "hexdigest"
                and isinstance(n.slice, ast.Slice)):
            upper = n.slice.upper
            if (isinstance(upper, ast.Constant) and upper.value == 12) or isinstance(upper, (ast.Name, ast.Attribute)):
                yield n.lineno


def hex_id_pattern(tree: ast.Module, rel: str) -> Iterator[int]:
    """A regex for 12 hex digits written out (in a pattern string or a schema)."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and HEX_ID.search(n.value):
            yield n.lineno


def id_width(tree: ast.Module, rel: str) -> Iterator[int]:
    """A module-level constant that restates the id's length (``ID_WIDTH = 12``)."""
    for n in tree.body:
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, ast.Constant) and n.value.value == 12:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(isinstance(t, ast.Name) and re.fullmatch(r"(LETTER_)?ID_(WIDTH|LENGTH|LEN|SIZE)", t.id)
                   for t in targets):
                yield n.lineno


@pytest.mark.parametrize("scan", [digest_cut, hex_id_pattern, id_width])
def test_the_letter_id_rule_is_spelled_only_in_ids(scan: Scan) -> None:
    assert offenders(scan, "model/ids.py") == []


def test_the_digest_scan_passes_digests_of_other_lengths() -> None:
    assert list(digest_cut(ast.parse("k = sha256(b).hexdigest()[:24]"), "x.py")) == []


@pytest.mark.parametrize(("scan", "source"), [
    (digest_cut, "x = sha256(line).hexdigest()[:12]"),
    (digest_cut, "x = hashlib.sha256(line).hexdigest()[:ID_LENGTH]"),
    (hex_id_pattern, "P = re.compile(r'msn_[0-9a-f]{12}')"),
    (hex_id_pattern, "LetterId = Annotated[str, Meta(pattern='^[0-9a-f]{12}$')]"),
    (id_width, "ID_WIDTH = 12"),
    (id_width, "ID_LENGTH: int = 12"),
])
def test_the_id_scans_see_a_second_spelling(scan: Scan, source: str) -> None:
    assert list(scan(ast.parse(source), "x.py"))


# -- the ack defaults: ``vocab_delivery`` ------------------------------------------------------

ACK_WORDS = re.compile(r"ack_timeout|reping_interval|max_repings", re.IGNORECASE)


def ack_literal(tree: ast.Module, rel: str) -> Iterator[int]:
    """A literal 300 or 2 on a line that names an ack policy setting (a default restated)."""
    lines = (PACKAGE / rel).read_text().splitlines() if rel != "x.py" else ast.unparse(tree).splitlines()
    for n in ast.walk(tree):
        if (isinstance(n, ast.Constant) and type(n.value) is int and n.value in (2, 300)
                and ACK_WORDS.search(lines[n.lineno - 1])):
            yield n.lineno


def test_the_ack_defaults_are_written_only_in_vocab_delivery() -> None:
    assert offenders(ack_literal, "model/vocab_delivery.py") == []


@pytest.mark.parametrize("source", [
    "t = _int(policy.get('ack_timeout_s'), 300)",
    "def send(max_repings: int = 2) -> None: ...",
    "class Send:\n    reping_interval: Seconds = 300",
])
def test_the_ack_scan_sees_a_restated_default(source: str) -> None:
    assert list(ack_literal(ast.parse(source), "x.py"))


def test_the_ack_scan_passes_other_numbers_beside_ack_words() -> None:
    assert list(ack_literal(ast.parse("ack_timeout: int = ACK_TIMEOUT_S\nx = MAX_REPINGS + 1"), "x.py")) == []


# -- the spool's name: ``addresses.SPOOL`` -----------------------------------------------------


def spool_defined(tree: ast.Module, rel: str) -> Iterator[int]:
    for n in ast.walk(tree):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "SPOOL" for t in targets):
            yield n.lineno


def test_spool_is_defined_once() -> None:
    assert offenders(spool_defined, "model/addresses.py") == []
    assert list(spool_defined(SOURCES["model/addresses.py"], "model/addresses.py"))


def test_the_spool_scan_sees_a_second_definition() -> None:
    assert list(spool_defined(ast.parse('SPOOL = "spool"'), "x.py"))
    assert list(spool_defined(ast.parse('SPOOL: Final = "spool"'), "x.py"))


# -- atomic file replacement: ``fileops.replace_file`` -----------------------------------------

WRITES = frozenset({"write", "write_all", "write_new", "open_fd", "write_bytes"})


def hand_replacement(tree: ast.Module, rel: str) -> Iterator[int]:
    """A function that writes a file and renames it over another by itself (temp name, write, replace),
    or any ``os.replace``/``os.rename`` outside the one file-operations module."""
    for n in _calls(tree):
        f = n.func
        if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "os"
                and f.attr in ("replace", "rename") and rel != "util/fileops.py"):
            yield n.lineno
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = {_name(c.func) for c in _calls(fn)}
            if "temp_name" in names and "replace" in names and names & WRITES:
                yield fn.lineno


def test_a_whole_file_is_replaced_only_by_replace_file() -> None:
    found = offenders(hand_replacement, "util/fileops.py")
    assert found == []
    home = [line for line in hand_replacement(SOURCES["util/fileops.py"], "util/fileops.py")]
    assert len(home) == 1  # replace_file itself: the scan sees the one it allows


@pytest.mark.parametrize("source", [
    "def f(path, data):\n    tmp = temp_name(path)\n    fd = fileops.open_fd(tmp)\n    fileops.write_all(fd, data)\n"
    "    fileops.replace(tmp, path)\n",
    "import os\nos.replace(a, b)",
    "import os\nos.rename(a, b)",
])
def test_the_replacement_scan_sees_a_second_one(source: str) -> None:
    assert list(hand_replacement(ast.parse(source), "x.py"))


# -- the field-report schema: ``verbs.Report`` -------------------------------------------------

REPORT_FIELDS = frozenset(f.encode_name for f in msgspec.structs.fields(verbs.Report))


def report_field_list(tree: ast.Module, rel: str) -> Iterator[int]:
    """A literal list of eight or more field names, all of them the report's: a second schema."""
    for n in ast.walk(tree):
        if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            words = [e.value for e in n.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(words) >= 8 and len(words) == len(n.elts) and set(words) <= REPORT_FIELDS:
                yield n.lineno


def test_the_report_schema_is_only_the_typed_verb() -> None:
    assert offenders(report_field_list, "verbs/reports.py") == []


def test_the_schema_scan_sees_a_second_field_list() -> None:
    source = ('STRING_FIELDS = ("ts", "agent", "kind", "repo", "brain", "tool", "class", "what", "expected",\n'
              '    "snippet", "symptom", "misdelivery_kind", "disposition", "fingerprint", "case_id", "commit")')
    assert list(report_field_list(ast.parse(source), "x.py"))


# -- letter kinds and lifecycle moves: ``vocab.LetterKind`` ------------------------------------

LETTER_KINDS = frozenset(k.value for k in LetterKind)
REPORT_CLASSES = frozenset(c.value for c in ReportClass)
#: The faces write documents (an OpenAPI link's example), not letters: the rule is the layers' below them.
FACES = ("cli/", "http/", "mcp/")


def _is_kind(e: ast.expr) -> bool:
    name = e.attr if isinstance(e, ast.Attribute) else e.id if isinstance(e, ast.Name) else ""
    return name == "kind" or name.endswith("_kind")


def bare_kind(tree: ast.Module, rel: str) -> Iterator[int]:
    """A letter kind written as a bare string: compared with a ``kind``, or put in a letter's ``kind``."""
    if rel.startswith(FACES):
        return
    for n in ast.walk(tree):
        found: list[ast.expr] = []
        if isinstance(n, ast.Compare) and (_is_kind(n.left) or any(_is_kind(c) for c in n.comparators)):
            for c in [n.left, *n.comparators]:
                found += c.elts if isinstance(c, (ast.Tuple, ast.Set, ast.List)) else [c]
        elif isinstance(n, ast.Dict):
            found += [v for k, v in zip(n.keys, n.values, strict=True)
                      if isinstance(k, ast.Constant) and k.value == "kind"]
        elif isinstance(n, ast.keyword) and n.arg == "kind":
            found.append(n.value)
        if any(isinstance(e, ast.Constant) and e.value in LETTER_KINDS for e in found):
            yield n.lineno


def class_set(tree: ast.Module, rel: str) -> Iterator[int]:
    """A set of report classes written out as strings (``frozenset({"win", "triage"})``)."""
    if rel.startswith(FACES):
        return
    for n in ast.walk(tree):
        if (isinstance(n, (ast.Tuple, ast.Set, ast.List)) and len(n.elts) >= 2
                and all(isinstance(e, ast.Constant) and e.value in REPORT_CLASSES for e in n.elts)):
            yield n.lineno


def test_letter_kinds_are_spelled_only_in_the_vocabulary() -> None:
    assert offenders(bare_kind, "model/vocab.py") == []


def test_report_classes_are_spelled_only_in_the_vocabulary() -> None:
    assert offenders(class_set, "model/vocab.py") == []


@pytest.mark.parametrize(("scan", "source"), [
    (bare_kind, 'if kind == "draft": pass'),
    (bare_kind, 'ok = letter.kind != "message"'),
    (bare_kind, 'ok = link.kind in ("claim", "defer")'),
    (bare_kind, 'rec = {"ts": ts, "kind": "sent"}'),
    (bare_kind, 'msg = compose(ctx, m, kind="draft")'),
    (class_set, '_NOT_TROUBLE = frozenset({"win", "triage"})'),
])
def test_the_kind_scans_see_a_bare_spelling(scan: Scan, source: str) -> None:
    assert list(scan(ast.parse(source), "ops/x.py"))


def test_the_kind_scan_passes_a_kind_that_is_not_a_letters() -> None:
    assert list(bare_kind(ast.parse('if kind == "token_issue": pass\nx = {"kind": "block"}'), "ops/x.py")) == []


def test_the_lifecycle_table_is_keyed_by_the_vocabulary_and_move_kind_is_its_callers_part() -> None:
    from dovecote.derive.lifecycle import TRANSITIONS

    keys = {k for moves in TRANSITIONS.values() for k in moves}
    assert all(type(k) is LetterKind for k in keys), keys
    assert {m.value for m in MoveKind} == {k.value for k in keys} - {LetterKind.resurface.value}
    assert TRANSITIONS[next(iter(TRANSITIONS))]["claim"]  # a letter's kind (plain text) finds its move


# -- a store's capabilities: ``store_capability.can`` ------------------------------------------

STORE_CLASSES = frozenset({"FileStore", "PostgresStore", "MemoryStore"})


def store_class_test(tree: ast.Module, rel: str) -> Iterator[int]:
    """A use case that tests a store's class (``isinstance(ctx.store, FileStore)``) instead of asking
    what it can do."""
    if not rel.startswith("ops/"):
        return
    for n in _calls(tree):
        if _name(n.func) == "isinstance" and len(n.args) == 2:
            kinds = n.args[1].elts if isinstance(n.args[1], ast.Tuple) else [n.args[1]]
            if any(_name(k) in STORE_CLASSES for k in kinds):
                yield n.lineno


def test_ops_ask_a_store_what_it_can_do_not_what_class_it_is() -> None:
    assert offenders(store_class_test, "store/capability.py") == []


@pytest.mark.parametrize("source", [
    "files = isinstance(ctx.store, FileStore)",
    "if not isinstance(ctx.store, store_postgres.PostgresStore): pass",
    "ok = isinstance(s, (MemoryStore, FileStore))",
])
def test_the_store_scan_sees_a_class_test(source: str) -> None:
    assert list(store_class_test(ast.parse(source), "ops/x.py"))


def test_each_backend_says_what_it_can_do() -> None:
    from dovecote.store.capability import Capability, can
    from dovecote.store.files import FileStore
    from dovecote.store.memory import MemoryStore
    from dovecote.store.postgres.store import PostgresStore

    assert [c for c in Capability if can(FileStore, c)] == [c for c in Capability if c is not Capability.database_rows]
    assert [c for c in Capability if can(PostgresStore, c)] == [Capability.database_rows]
    assert [c for c in Capability if can(MemoryStore, c)] == []


# -- a verb command's options: ``cli/options`` -------------------------------------------------

#: Parameters of the face, not of a verb (``test_verb_drift.FACE_ONLY`` says why each is one).
FACE_PARAMETERS = {"json", "json_in", "fmt", "detailed", "args", "actor", "file", "poster", "rows", "every",
                   "paths_from_stdin"}

#: Command functions that are not a verb's (``test_verb_drift.NOT_VERBS``): every option is the face's own.
NOT_VERB_COMMANDS = {
    ("cli/cmd_misc.py", "init_cmd"), ("cli/cmd_misc.py", "merge_driver_cmd"), ("cli/cmd_misc.py", "demo_cmd"),
    ("cli/cmd_store.py", "migrate_cmd"), ("cli/cmd_store.py", "copy_cmd"), ("cli/cmd_serve.py", "serve_cmd"),
    ("cli/cmd_mcp.py", "mcp_cmd"), ("cli/cmd_cases.py", "post_tool_cmd"),
    ("cli/cmd_agents.py", "command"),  # the hook commands: they read the agent's payload on stdin
}


def _defaults(args: ast.arguments) -> dict[str, ast.expr]:
    positional = [*args.posonlyargs, *args.args]
    pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True),
             *zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    return {a.arg: d for a, d in pairs if d is not None}


def restated_option(tree: ast.Module, rel: str) -> Iterator[int]:
    """A verb command's parameter written in its command module instead of made from the verb by
    ``cli.options``: a default that is not ``option(...)`` or ``argument(...)`` (a literal such as
    ``= "normal"``, ``= 120``, ``= Priority.normal.value``), or a ``typer.Option``/``typer.Argument``
    of its own in the annotation (the flag's help and vocabulary written by hand)."""
    if not re.fullmatch(r"cli/cmd_\w+\.py", rel):
        return
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or (rel, fn.name) in NOT_VERB_COMMANDS:
            continue
        defaults = _defaults(fn.args)
        for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]:
            if a.arg in FACE_PARAMETERS:
                continue
            given = defaults.get(a.arg)
            made = isinstance(given, ast.Call) and _name(given.func) in ("option", "argument")
            typed = a.annotation
            by_hand = typed is not None and any(_name(c.func) in ("Option", "Argument") for c in _calls(typed))
            if (given is not None and not made) or by_hand:
                yield a.lineno


def test_a_verb_commands_options_come_from_its_verb() -> None:
    assert offenders(restated_option, "cli/options.py") == []


@pytest.mark.parametrize("source", [
    'def c(priority: str = "normal") -> None: ...',
    "def c(ack_timeout: int = ACK_TIMEOUT_S, json: JsonOpt = False) -> None: ...",
    'def c(p: Annotated[str, typer.Option("--p", metavar=one_of(V, "p"))] = Priority.normal.value) -> None: ...',
    'def c(recipient: Annotated[str, typer.Option("--recipient", help=doc(Message, "recipient"))]) -> None: ...',
    'def c(ref: Annotated[str, typer.Argument(metavar="ID")], *, limit: int = 50) -> None: ...',
    "def c(include_all: IncludeAllOpt = False) -> None: ...",
])
def test_the_option_scan_sees_a_restated_default(source: str) -> None:
    assert list(restated_option(ast.parse(source), "cli/cmd_x.py"))


def test_the_option_scan_passes_options_made_from_the_verb_and_the_faces_own() -> None:
    source = ('def c(ctx: typer.Context, p: str = option(V, "p", "--p"), e: str = argument(V, "e"),'
              " json: JsonOpt = False, rows: LimitOpt = None, **own: Any) -> None: ...")
    assert list(restated_option(ast.parse(source), "cli/cmd_x.py")) == []
