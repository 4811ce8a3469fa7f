"""The CLI cannot drift from the typed verbs (``dovecote.verbs``): every command is walked.

For each command that is a verb of the handle, every option and argument must
be a field of that verb (same name, flag spelled as the field, same default,
type, enum and whether it is required), and every field must be on the command,
except the few listed below with the reason. The old flag spellings stay
working as hidden aliases, and only those.
"""

from __future__ import annotations

import enum
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Union

import msgspec
import orjson
import pytest
import typer.main
from typer.testing import CliRunner

from dovecote import verbs
from dovecote.cli.app import app
from dovecote.errors import Refusal
from helpers import run_cli, snapshot

ROOT = typer.main.get_command(app)

#: Commands that are not verbs of the handle.
NOT_VERBS = {
    ("init",): "creates a home; there is no handle before it",
    ("demo",): "builds a demo home and prints several verbs' answers",
    ("mcp",): "serves the MCP face: its tools are the verbs (tests/mcp/test_mcp.py)",
    ("merge-driver",): "git calls it with three file paths; it unions ledgers, below any home",
    ("serve",): "a face: serves the verbs over HTTP; its options choose where to listen",
    ("db", "migrate"): "changes a database's schema, below any handle (the handle would refuse an unmigrated one)",
    ("copy",): "moves every ledger between two stores: an operator's act on the home, not a remote call",
    ("gesture-key", "set"): "the person's gesture passphrase, typed at the terminal: no option, no remote call",
    **{("hook", k): "an agent's hook: reads the agent's JSON payload on stdin and always exits 0"
       for k in ("session-start", "prompt", "stop", "post-tool")},
}

#: Command -> its verb. The six lifecycle commands are one verb, ``Move``, whose ``kind`` is the command.
COMMANDS: dict[tuple[str, ...], type[verbs.Verb]] = {
    ("report",): verbs.Report,
    ("distribute",): verbs.Distribute,
    ("sweep",): verbs.Sweep,
    ("box",): verbs.Box,
    ("doctor",): verbs.Doctor,
    ("verify",): verbs.Verify,
    ("send",): verbs.Send,
    ("draft",): verbs.Message,
    ("outbox", "send"): verbs.OutboxSend,
    **{(k.value,): verbs.Move for k in verbs.MoveKind},
    ("inbox",): verbs.Inbox,
    ("show",): verbs.Show,
    ("view",): verbs.View,
    ("import", "inbox-tree"): verbs.ImportInboxTree,
    ("import", "agent-mail"): verbs.ImportAgentMail,
    ("import", "vnext"): verbs.ImportVnext,  # issue 9
    ("search",): verbs.Search,
    ("stale-check",): verbs.StaleCheck,
    ("organize",): verbs.Organize,
    ("wait",): verbs.Wait,
    ("project", "add"): verbs.ProjectAdd,
    ("project", "remove"): verbs.ProjectRemove,
    ("project", "list"): verbs.ProjectList,
    ("entity", "add"): verbs.EntityAdd,
    ("entity", "remove"): verbs.EntityRemove,
    ("entity", "list"): verbs.EntityList,
    ("token", "issue"): verbs.TokenIssue,
    ("token", "list"): verbs.TokenList,
    ("token", "revoke"): verbs.TokenRevoke,
    ("hooks", "install"): verbs.HooksInstall,
    # -- delivery (issue 9) --
    ("intake",): verbs.Intake,
    ("mailman",): verbs.Mailman,
    ("ack",): verbs.Ack,
    ("trackers",): verbs.Trackers,
    ("presence", "beat"): verbs.PresenceBeat,
    ("presence", "list"): verbs.Presence,
    ("status",): verbs.Status,
    # case intelligence (issue 10)
    ("receipt",): verbs.Receipt,
    ("cases",): verbs.Cases,
    ("case",): verbs.Case,
    ("sentinels",): verbs.Sentinels,
    ("claims",): verbs.Claims,
    ("monitor", "add"): verbs.MonitorAdd,
    ("monitors",): verbs.Monitors,
    # missions (issue 11)
    ("block", "add"): verbs.BlockAdd,
    ("block", "bump"): verbs.BlockBump,
    ("blocks",): verbs.Blocks,
    ("mission", "post"): verbs.MissionPost,
    ("mission", "show"): verbs.Mission,
    ("mission", "archive"): verbs.MissionArchive,
    ("missions",): verbs.Missions,
    ("receipt", "import"): verbs.ReceiptImport,
    # advisory file leases
    ("lease", "take"): verbs.LeaseTake,
    ("lease", "renew"): verbs.LeaseRenew,
    ("lease", "release"): verbs.LeaseRelease,
    ("lease", "list"): verbs.Leases,
    ("lease", "check"): verbs.LeaseCheck,
    ("lease", "guard", "install"): verbs.LeaseGuardInstall,
}

#: Verbs whose CLI form is a hook of NOT_VERBS (its payload on stdin, always exit 0), and why they are verbs.
ON_CLI_AS_HOOKS = {
    verbs.HookEvent: "hook post-tool and hook stop take the payload on stdin; the verb relays them over REST and MCP",
}

#: Options of the face, not of the verb: they choose a rendering or bind who acts.
FACE_ONLY = {
    "json": "--json chooses JSON output (on report: '-' reads the letters from stdin)",
    "json_in": "report --json - reads letters as JSON from stdin",
    "fmt": "inbox --format chooses the rendering",
    "detailed": "inbox --detailed/--compact chooses the rendering",
    "rows": "--limit on a long text listing chooses how many rows the text shows (cli.listing), never the JSON",
    "every": "--no-limit on a long text listing shows every row (cli.listing), never changing the JSON",
    "args": "inbox [ENTITY] [status]: the entity, and 'status' for the counts-only rendering",
    "actor": "a move's --actor binds who acts (the handle's actor=), as a token does over MCP",
    "file": "mission post --file reads the letter (the verb's letter field) from a file, or stdin",
    "poster": "mission post --agent binds who posts (the handle's actor=), as a token does over MCP",
    "paths_from_stdin": "lease check --paths-from-stdin reads more of the verb's paths from stdin, as git gives them",
}

#: Fields a command does not take as an option, and why.
NOT_ON_CLI = {
    (verbs.Report, "ts"): "a letter's own time: given in JSON on stdin (report --json -)",
    (verbs.Report, "kind"): "given in JSON on stdin",
    (verbs.Report, "disposition"): "a receipt's detail: given in JSON on stdin",
    (verbs.Report, "fingerprint"): "a receipt's detail: given in JSON on stdin",
    (verbs.Report, "case_id"): "a receipt's detail: given in JSON on stdin",
    (verbs.Report, "commit"): "a receipt's detail: given in JSON on stdin",
    (verbs.Report, "sentinel"): "an object: given in JSON on stdin",
    (verbs.Move, "kind"): "the command's name is the kind",
    (verbs.Inbox, "entity_id"): "the first word of the [ENTITY] [status] argument",
    (verbs.MissionPost, "letter"): "the letter is JSON, read from --file or stdin",
}

#: Required fields a command takes as optional options, and why.
OPTIONAL_ON_CLI = {
    **{(verbs.Report, name): "report --json - gives it instead; with neither it is refused missing_field"
       for name in ("tool", "klass", "what")},
    **{(verbs.Receipt, name): "receipt is also the group of receipt import (issue 11): without a subcommand "
       "and without it, it is refused missing_field" for name in ("answers", "disposition")},
}

#: A repeatable option is named for one value.
SINGULAR = {"aliases": "--alias", "artifact_paths": "--artifact", "constraints": "--constraint",
            "acceptance_criteria": "--acceptance-criterion"}

#: A CLI type that differs from the field's on purpose.
OTHER_TYPE = {(verbs.Search, "query"): "the query's words as separate arguments, joined by spaces"}

#: The old spellings, kept working and out of the help.
ALIASES: dict[tuple[str, ...], set[str]] = {
    ("send",): {"--to", "--from", "--trust", "--thread", "--expires-tic"},
    ("draft",): {"--to", "--from", "--trust", "--thread", "--expires-tic"},
    ("outbox", "send"): {"--from"},
    ("sweep",): {"--all"},
    ("box",): {"--all"},
    ("inbox",): {"--all"},
    ("search",): {"--entity"},
    ("import", "inbox-tree"): {"--entity"},
    ("hooks", "install"): {"--entity"},
    ("trackers",): {"--work-item", "--thread"},
    ("status",): {"--work-item", "--thread"},
}


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command, and the group that is a verb's command too (``receipt``, whose subcommand is ``import``)."""
    subs = getattr(cmd, "commands", None)
    if subs is None:
        return [(path, cmd)]
    own = [(path, cmd)] if path == ("receipt",) else []
    return own + [c for name, sub in subs.items() for c in _commands(sub, (*path, name))]


ALL = dict(_commands(ROOT))


def _unwrap(t: Any) -> Any:
    """A field's type without Annotated and without None."""
    while typing.get_origin(t) is Annotated:
        t = typing.get_args(t)[0]
    if typing.get_origin(t) in (Union, types.UnionType):
        (t,) = [a for a in typing.get_args(t) if a is not type(None)]
        return _unwrap(t)
    return t


def field_kind(t: Any) -> str:
    t = _unwrap(t)
    if typing.get_origin(t) in (list, tuple):
        return "list[" + field_kind(typing.get_args(t)[0]) + "]"
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return "enum"
    return {int: "int", float: "float", str: "str", bool: "bool"}.get(t, repr(t))


def cli_kind(p: Any) -> str:
    t = p.type_descriptor.annotation
    if typing.get_origin(t) is list:
        return "list[" + {Path: "str", str: "str", int: "int"}[typing.get_args(t)[0]] + "]"
    return {Path: "str", str: "str", int: "int", float: "float", bool: "bool"}[t]


def _norm(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if value in ((), []):
        return None
    return value


def _fields(verb: type[verbs.Verb]) -> dict[str, Any]:
    return {f.name: f for f in msgspec.structs.fields(verb)}


def test_every_command_is_a_verb_or_listed_as_not_one() -> None:
    assert set(ALL) == set(COMMANDS) | set(NOT_VERBS)


def test_every_verb_of_the_handle_has_a_command() -> None:
    assert set(verbs.VERBS.values()) - set(ON_CLI_AS_HOOKS) == set(COMMANDS.values())


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_each_option_is_a_field_with_the_same_name_default_and_type(path: tuple[str, ...]) -> None:
    verb = COMMANDS[path]
    fields = _fields(verb)
    hints = typing.get_type_hints(verb, include_extras=True)
    for p in ALL[path].params:
        if p.name in FACE_ONLY or p.name == "help":
            continue
        assert p.name in fields, f"{' '.join(path)}: {p.opts} has no field in {verb.__name__}"
        f = fields[p.name]
        if p.param_type_name == "option":
            flag = SINGULAR.get(f.name, "--" + f.encode_name.replace("_", "-"))
            assert p.opts[0] == flag, f"{' '.join(path)}: {p.opts[0]} should be spelled {flag} (its field)"
        default = None if f.required else (f.default_factory() if f.default is msgspec.NODEFAULT else f.default)
        assert p.required == (f.required and (verb, f.name) not in OPTIONAL_ON_CLI), (path, p.name)
        assert _norm(p.default) == _norm(default), f"{' '.join(path)} {p.name}: {p.default!r} != {default!r}"
        kind = field_kind(hints[f.name])
        if (verb, f.name) in OTHER_TYPE:
            continue
        if kind == "enum":  # text the verb decodes, so a bad value is refused invalid_field, as over MCP
            assert cli_kind(p) == "str" and p.metavar == "[" + "|".join(verbs.choices(verb, f.name)) + "]"
        else:
            assert cli_kind(p) == kind, f"{' '.join(path)} {p.name}: {cli_kind(p)} != {kind}"


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_each_field_is_an_option_unless_listed(path: tuple[str, ...]) -> None:
    verb = COMMANDS[path]
    names = {p.name for p in ALL[path].params}
    own = verbs.MOVE_OPTIONS[verbs.MoveKind(path[0])] if verb is verbs.Move else None
    for name in _fields(verb):
        if (verb, name) in NOT_ON_CLI or (own is not None and name in {"until_tic", "until", "reason", "result_ref"}):
            continue
        assert name in names, f"{' '.join(path)} has no option for {verb.__name__}.{name}"


@pytest.mark.parametrize("kind", list(verbs.MoveKind))
def test_each_move_command_takes_exactly_its_own_options(kind: verbs.MoveKind) -> None:
    names = {p.name for p in ALL[(kind.value,)].params} - {"help"}
    assert names == {"entity_id", "ref", "current_tic", "actor", "json"} | verbs.MOVE_OPTIONS[kind]


def test_the_listed_exceptions_are_real_fields() -> None:
    for verb, name in [*NOT_ON_CLI, *OTHER_TYPE, *OPTIONAL_ON_CLI]:
        assert name in _fields(verb), (verb, name)


@pytest.mark.parametrize("path", sorted(ALL), ids=" ".join)
def test_old_spellings_are_hidden_aliases_and_only_those(path: tuple[str, ...]) -> None:
    extra = {o for p in ALL[path].params if p.param_type_name == "option" for o in p.opts[1:]}
    assert extra == ALIASES.get(path, set())
    help_text = CliRunner().invoke(app, [*path, "--help"], prog_name="dovecote").output
    shown = set(help_text.replace(",", " ").replace("/", " ").split())
    assert not extra & shown, f"{' '.join(path)} --help shows {extra & shown}"


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_each_option_help_is_its_field_doc(path: tuple[str, ...]) -> None:
    verb = COMMANDS[path]
    for p in ALL[path].params:
        if p.name in FACE_ONLY or p.name == "help":
            continue
        assert verbs.doc(verb, p.name).rstrip(".") in (p.help or ""), (path, p.name)


def init_home(tmp: Path) -> Path:
    home = tmp / ".dovecote"
    assert run_cli(tmp, "init", "--owner-root", str(tmp), home=home).returncode == 0
    return home


def _message(home: Path, subject: str) -> dict[str, Any]:
    ledger = home / "boxes" / "entity" / "ent_b" / "letters.jsonl"
    rows = [orjson.loads(line) for line in ledger.read_bytes().splitlines()]
    return next(r for r in rows if r.get("content", {}).get("subject") == subject)


def test_the_old_flags_and_the_new_ones_write_the_same_envelope(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    for e in ("ent_a", "ent_b"):
        run_cli(tmp_path, "entity", "add", e, home=home)
    old = run_cli(tmp_path, "send", "--to", "ent_b", "--from", "ent_a", "--subject", "old", "--trust", "operator",
                  "--thread", "t1", "--expires-tic", "5", "--current-tic", "1", home=home)
    new = run_cli(tmp_path, "send", "--recipient", "ent_b", "--sender", "ent_a", "--subject", "new",
                  "--trust-level", "operator", "--thread-id", "t1", "--expires-at-tic", "5", "--current-tic", "1",
                  home=home)
    assert old.returncode == new.returncode == 0, (old.stderr, new.stderr)
    a, b = _message(home, "old"), _message(home, "new")
    assert a["routing"]["trust_level"] == "operator" and a["routing"]["thread_id"] == "t1"
    assert a["lifecycle"]["expires_at_tic"] == 5 and a["sender"]["entity_id"] == "ent_a"
    for block in ("routing", "lifecycle", "sender", "recipient"):
        assert a[block] == b[block], block


def test_a_bad_enum_on_the_cli_is_the_same_refusal_as_over_the_api(tmp_path: Path) -> None:
    home = init_home(tmp_path)
    run_cli(tmp_path, "entity", "add", "ent_b", home=home)
    before = snapshot(home)
    r = run_cli(tmp_path, "send", "--to", "ent_b", "--subject", "s", "--priority", "asap", home=home)
    tic = run_cli(tmp_path, "send", "--to", "ent_b", "--subject", "s", "--expires-at-tic", "-1", home=home)
    assert tic.returncode == 2 and tic.stderr.startswith(b"Error: invalid_field: send: expires_at_tic:")
    assert snapshot(home) == before
    assert r.returncode == 2
    assert r.stderr.decode().startswith("Error: invalid_field: send: priority:"), r.stderr
    assert "urgent, high, normal, low" in r.stderr.decode()
    with pytest.raises(Refusal) as e:
        verbs.decode(verbs.Send, {"recipient": "ent_b", "subject": "s", "priority": "asap"})
    assert str(e.value).split(" (one of")[0] in r.stderr.decode()
