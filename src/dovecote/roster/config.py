"""The roster: ``config.toml`` in the dovecote home.

It lists the projects (name, root, aliases, where the box is kept), the
entities, the one list of foreign-tool markers every surface uses, the limits,
the notifier settings and the tic source. Routing is a pure function of a letter
and this roster, so two machines with the same roster file file every letter
into the same box (DESIGN 1.8).

Loading validates everything and refuses an unknown key with ``invalid_config``
(a typo in a hand-edited roster must not silently change routing).
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Any

import msgspec

from dovecote.errors import Refusal
from dovecote.model.addresses import HOME, Address, check_name
from dovecote.model.vocab import DEFAULT_FOREIGN_MARKERS
from dovecote.roster.store_url import has_password, is_url
from dovecote.util.digests import sha256


class Project(msgspec.Struct, frozen=True):
    name: str
    root: str
    aliases: tuple[str, ...] = ()
    box_in_repo: bool = False


class Entity(msgspec.Struct, frozen=True):
    id: str
    role: str | None = None


class Limits(msgspec.Struct, frozen=True):
    """Size limits, in bytes, and thresholds, in tics or hours."""

    report_max_bytes: int = 64 * 1024
    body_inline_max: int = 1024 * 1024
    body_hard_limit: int = 16 * 1024 * 1024
    stale_tics: int = 5
    stale_hours: int = 24
    expiring_tics: int = 2


class Roster(msgspec.Struct, frozen=True):
    owner_roots: tuple[str, ...] = ()
    owner_home: str = ""
    projects: tuple[Project, ...] = ()
    entities: tuple[Entity, ...] = ()
    foreign_markers: tuple[str, ...] = DEFAULT_FOREIGN_MARKERS
    limits: Limits = msgspec.field(default_factory=Limits)
    tic_source: str | None = None
    notifier_mode: str = "none"
    #: agent-turn-nudge's command template ({agent}, {message}), its timeout, and the discovery command ({minutes})
    notifier_command: str | None = None
    notifier_timeout: int = 15
    discovery_command: str | None = None
    #: Where the ledgers live: None for the home's files, else a PostgreSQL URL (never with a password)
    store: str | None = None
    #: The intake folders besides the home's own (absolute paths; ``intake --dir`` lists each it is given)
    intake_dirs: tuple[str, ...] = ()
    signature: str = ""  # sha256 of the file it was read from

    def project(self, name: str) -> Project | None:
        low = name.lower()
        for p in self.projects:
            if p.name.lower() == low:
                return p
        return None

    def entity(self, entity_id: str) -> Entity | None:
        for e in self.entities:
            if e.id == entity_id:
                return e
        return None

    def entity_like(self, entity_id: str) -> Entity | None:
        """The entity whose id equals ``entity_id`` but for case: on a case-insensitive disk (macOS, Windows)
        the two would share one box folder, and a reader takes them for one name."""
        low = entity_id.lower()
        return next((e for e in self.entities if e.id.lower() == low), None)

    def report_boxes(self) -> list[Address]:
        """The boxes field reports are filed into: home and every project (the ownership law's targets)."""
        return [HOME, *(Address("project", p.name) for p in self.projects)]


_TOP_KEYS = {"owner", "markers", "limits", "tics", "notifier", "projects", "entities", "store", "intake"}
_NOTIFIER_MODES = ("none", "discover-only", "agent-turn-nudge")


def _bad(detail: str) -> Refusal:
    return Refusal("invalid_config", detail)


def _expect(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _bad(f"{where} must be a {kind.__name__}")
    return value


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    _expect(value, list, where)
    for v in value:
        _expect(v, str, f"{where}[]")
    return tuple(value)


def _only(table: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise _bad(f"unknown key(s) {', '.join(extra)} in {where}")


def normalize_root(root: str, owner_home: str = "") -> str:
    """Expand a leading ``~`` against the roster's recorded home; strip trailing '/'.

    A blank root stays blank (it used to become ``/``, a root that contains
    every path); ``root_problem`` then refuses it.
    """
    root = root.strip()
    if owner_home and (root == "~" or root.startswith("~/")):
        root = owner_home + root[1:]
    return (root.rstrip("/") or "/") if root else ""


def lexical(path: str) -> str:
    """Resolve "." and ".." in an absolute path on the string alone (never the file system)."""
    return "/" + posixpath.normpath(path).lstrip("/") if path.startswith("/") else path


def root_problem(root: str) -> str | None:
    """Why a normalized root cannot be a root (of a project or the owner), or None if it can."""
    if not root:
        return "is blank (a blank root would read as / and claim every path)"
    if any(ord(c) < 32 or ord(c) == 127 for c in root):
        return "holds a control character"
    if not root.startswith("/"):
        return "must be an absolute path"
    return None


def root_clash(projects: tuple[Project, ...] | list[Project], p: Project) -> Project | None:
    """Another project with ``p``'s root, if any.

    Two projects at one root are refused whatever their box: kept in the
    repository they would share one ledger (``<root>/.dovecote/``) and sweep
    would label each letter with either name; kept in the home, every path
    under that root would be ambiguous between them and stay pending for good.
    """
    mine = lexical(p.root)
    return next((o for o in projects if o.name.lower() != p.name.lower() and lexical(o.root) == mine), None)


def decode_toml(text: bytes) -> dict[str, Any]:
    """Roster bytes as their TOML document (``invalid_config`` if they are not TOML)."""
    import tomllib  # its import compiles its regexes: a cold CLI call reads the document from ``roster_cache``

    try:
        return tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise _bad(f"config.toml is not valid TOML: {err}") from err


def parse(text: bytes, doc: dict[str, Any] | None = None) -> Roster:
    """Parse and validate roster bytes (``doc``: their TOML document, when it is already decoded)."""
    if doc is None:
        doc = decode_toml(text)
    _only(doc, _TOP_KEYS, "config.toml")
    owner = _expect(doc.get("owner", {}), dict, "[owner]")
    _only(owner, {"roots", "home"}, "[owner]")
    owner_home = _expect(owner.get("home", ""), str, "owner.home")
    owner_roots = tuple(
        normalize_root(r, owner_home) for r in _str_list(owner.get("roots", []), "owner.roots")
    )
    for r in owner_roots:
        if problem := root_problem(r):
            raise _bad(f"owner.roots entry {r!r} {problem}")
    markers_t = _expect(doc.get("markers", {}), dict, "[markers]")
    _only(markers_t, {"foreign"}, "[markers]")
    markers = tuple(
        m.lower() for m in _str_list(markers_t.get("foreign", list(DEFAULT_FOREIGN_MARKERS)), "markers.foreign")
    )
    if any(not m for m in markers):
        raise _bad("markers.foreign cannot hold an empty marker (it would match every tool)")
    limits_t = _expect(doc.get("limits", {}), dict, "[limits]")
    known_limits = set(Limits.__struct_fields__)
    _only(limits_t, known_limits, "[limits]")
    for k, v in limits_t.items():
        if _expect(v, int, f"limits.{k}") <= 0:
            raise _bad(f"limits.{k} must be positive")
    limits = Limits(**limits_t)
    tics = _expect(doc.get("tics", {}), dict, "[tics]")
    _only(tics, {"source"}, "[tics]")
    tic_source = tics.get("source")
    if tic_source is not None:
        _expect(tic_source, str, "tics.source")
    notifier = _expect(doc.get("notifier", {}), dict, "[notifier]")
    _only(notifier, {"mode", "command", "timeout", "discovery"}, "[notifier]")
    mode = _expect(notifier.get("mode", "none"), str, "notifier.mode")
    if mode == "session-inject":
        raise Refusal("unverified_mode", "notifier.mode session-inject is reserved: no session injection is verified")
    if mode not in _NOTIFIER_MODES:
        raise _bad(f"notifier.mode must be one of {', '.join(_NOTIFIER_MODES)}")
    command = notifier.get("command")
    discovery = notifier.get("discovery")
    for value, where in ((command, "notifier.command"), (discovery, "notifier.discovery")):
        if value is not None:
            _expect(value, str, where)
    timeout = _expect(notifier.get("timeout", 15), int, "notifier.timeout")
    if timeout <= 0:
        raise _bad("notifier.timeout must be positive")

    store = doc.get("store")
    if store is not None:
        check_store(_expect(store, str, "store"))
    intake = _expect(doc.get("intake", {}), dict, "[intake]")
    _only(intake, {"dirs"}, "[intake]")
    intake_dirs = _str_list(intake.get("dirs", []), "intake.dirs")
    if not all(os.path.isabs(d) for d in intake_dirs):
        raise _bad("intake.dirs holds absolute paths only")

    projects: list[Project] = []
    seen: set[str] = set()
    for i, p in enumerate(_expect(doc.get("projects", []), list, "[[projects]]")):
        where = f"projects[{i}]"
        _expect(p, dict, where)
        _only(p, {"name", "root", "aliases", "box_in_repo"}, where)
        name = check_name(_expect(p.get("name"), str, f"{where}.name"), "project name")
        if name.lower() in seen:
            raise _bad(f"project {name!r} is listed twice")
        seen.add(name.lower())
        root = normalize_root(_expect(p.get("root"), str, f"{where}.root"), owner_home)
        if problem := root_problem(root):
            raise _bad(f"{where}.root {problem}")
        aliases = _str_list(p.get("aliases", []), f"{where}.aliases")
        for a in aliases:
            check_name(a, "alias")
        project = Project(
            name, root, aliases, bool(_expect(p.get("box_in_repo", False), bool, f"{where}.box_in_repo"))
        )
        if clash := root_clash(projects, project):
            raise _bad(f"projects {clash.name!r} and {name!r} have one root, {root}")
        projects.append(project)
    entities: list[Entity] = []
    ids: set[str] = set()
    for i, e in enumerate(_expect(doc.get("entities", []), list, "[[entities]]")):
        where = f"entities[{i}]"
        _expect(e, dict, where)
        _only(e, {"id", "role"}, where)
        eid = check_name(_expect(e.get("id"), str, f"{where}.id"), "entity id")
        if eid in ids:
            raise _bad(f"entity {eid!r} is listed twice")
        ids.add(eid)
        role = e.get("role")
        if role is not None:
            _expect(role, str, f"{where}.role")
        entities.append(Entity(eid, role))
    return Roster(
        owner_roots=owner_roots,
        owner_home=owner_home,
        projects=tuple(projects),
        entities=tuple(entities),
        foreign_markers=markers,
        limits=limits,
        tic_source=tic_source,
        notifier_mode=mode,
        notifier_command=command,
        notifier_timeout=timeout,
        discovery_command=discovery,
        store=store,
        intake_dirs=intake_dirs,
        signature=sha256(text).hexdigest(),
    )


def dump(r: Roster) -> bytes:
    """Serialize a roster (inverse of ``parse`` up to the signature)."""
    doc: dict[str, Any] = {
        **({"store": r.store} if r.store is not None else {}),
        "owner": {"home": r.owner_home, "roots": list(r.owner_roots)},
        "markers": {"foreign": list(r.foreign_markers)},
        "notifier": {
            "mode": r.notifier_mode,
            **({"command": r.notifier_command} if r.notifier_command is not None else {}),
            **({"timeout": r.notifier_timeout} if r.notifier_timeout != 15 else {}),
            **({"discovery": r.discovery_command} if r.discovery_command is not None else {}),
        },
    }
    defaults = Limits()
    changed = {
        k: getattr(r.limits, k)
        for k in Limits.__struct_fields__
        if getattr(r.limits, k) != getattr(defaults, k)
    }
    if changed:
        doc["limits"] = changed
    if r.tic_source is not None:
        doc["tics"] = {"source": r.tic_source}
    if r.intake_dirs:
        doc["intake"] = {"dirs": list(r.intake_dirs)}
    if r.projects:
        doc["projects"] = [
            {"name": p.name, "root": p.root, "aliases": list(p.aliases), "box_in_repo": p.box_in_repo}
            for p in r.projects
        ]
    if r.entities:
        doc["entities"] = [
            {"id": e.id, **({"role": e.role} if e.role is not None else {})} for e in r.entities
        ]
    import tomlkit  # only writers need it; reading is tomllib

    header = b"# dovecote roster: projects, entities, markers and settings (see README)\n"
    return header + tomlkit.dumps(doc).encode("utf-8")


def load(path: Path) -> Roster:
    return parse(read(path))


def read(path: Path) -> bytes:
    """The roster file's bytes (``no_home`` when there is none)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise Refusal("no_home", f"no roster at {path}; run `dovecote init`") from None


def check_store(url: str) -> str:
    """Refuse a ``store`` setting that is not a PostgreSQL URL, or that carries a password
    (config.toml is no place for one: libpq reads it from PGPASSWORD or ~/.pgpass)."""
    if not is_url(url):
        raise _bad("store must be a postgresql:// URL (leave it out for the home's files)")
    if has_password(url):
        raise Refusal("password_in_config", "the store URL carries a password; give it in PGPASSWORD or "
                      "~/.pgpass, never in config.toml")
    return url


def new_roster(owner_root: str) -> Roster:
    home = os.path.expanduser("~")
    return Roster(owner_roots=(normalize_root(owner_root),), owner_home=home)


#: Words the ownership law reads as "no project": a project cannot be called by them.
PROJECTLESS_WORDS = frozenset({"all"})
