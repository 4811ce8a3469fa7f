"""Symptoms and fingerprints (R11 organ 1): which case a letter is a witness of.

Law (CASE-INV-2): no symptom, no fingerprint; there is no "other" bucket. A
letter's symptom is the one its author gave (``symptom``, from the closed
vocabulary ``vocab.Symptom``), else one read from a legacy field without
rewriting it (a ``kind`` that names a symptom, a misdelivery sub-kind that maps
to one), else the first deterministic rule of ``RULES`` that matches its text.
Rules never guess past their words: a letter no rule matches stays kindless,
which is the signal that the vocabulary needs to grow (``kindless``).

Pure: nothing here opens a file. The rule table is also listed on the site's cases page,
``docs/concepts/cases.md`` (``tests/derive/test_symptoms.py`` checks that every rule has its own test and a row
there).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from dovecote.errors import Refusal
from dovecote.model.letters import Letter
from dovecote.model.vocab import ENGINE_AGENT, SYMPTOMS, ReportClass

_SYMPTOMS = frozenset(SYMPTOMS)
_FP = re.compile(r"fp:(?P<family>[^\s/][^/]*)/(?P<symptom>[a-z_]+)")


def tool_family(tool: str | None) -> str | None:
    """``tool`` lowercased, any parenthesised suffix dropped, trimmed; None when nothing is left."""
    if not isinstance(tool, str):
        return None
    family = tool.split("(", 1)[0].strip().lower()
    return family or None


def fingerprint(family: str | None, symptom: str | None) -> str | None:
    """``fp:<tool_family>/<symptom>``; None without both (and for a family holding ``/``)."""
    if not family or not symptom or "/" in family:
        return None
    return f"fp:{family}/{symptom}"


def parse_fingerprint(text: str) -> tuple[str, str] | None:
    """(tool_family, symptom) of a written fingerprint, or None when it is not one."""
    m = _FP.fullmatch(text)
    if m is None or m["symptom"] not in _SYMPTOMS or tool_family(m["family"]) != m["family"]:
        return None
    return m["family"], m["symptom"]


def check_fingerprint(text: str) -> tuple[str, str]:
    """(tool_family, symptom) of a given fingerprint; ``unknown_symptom`` / ``invalid_field`` otherwise."""
    got = parse_fingerprint(text)
    if got is not None:
        return got
    _, _, symptom = text.rpartition("/")
    if text.startswith("fp:") and "/" in text and symptom not in SYMPTOMS:
        raise Refusal("unknown_symptom", f"{symptom!r} is not a symptom; the vocabulary is {', '.join(SYMPTOMS)}")
    raise Refusal("invalid_field", f"fingerprint {text!r} is not fp:<tool_family>/<symptom> (family lowercased)")


# -- the legacy fields read without rewriting ---------------------------------

#: Misdelivery sub-kinds (MEDULLA 9.1) that name a symptom; ``misattribution`` names none.
MISDELIVERY_SYMPTOM: dict[str, str] = {
    "false_absence": "false_absence",
    "leak": "scope_escape",
    "vanished": "silent_drop",
    "wrong_store_write": "wrong_route",
}


# -- the backfill rules -------------------------------------------------------


class Rule(msgspec.Struct, frozen=True):
    """One deterministic backfill rule: letters of ``classes`` whose lowercased ``what``
    holds one of ``any_of`` (and, when given, one of ``and_any_of``) get ``symptom``."""

    name: str
    classes: frozenset[str]
    symptom: str
    any_of: tuple[str, ...]
    and_any_of: tuple[str, ...] = ()

    def matches(self, klass: str | None, what: str) -> bool:
        """Whether the rule applies to a letter of ``klass`` whose lowercased text is ``what``
        (the rule as written; ``symptom_rule`` decides the same through ``_by_class``)."""
        if klass not in self.classes:
            return False
        return any(w in what for w in self.any_of) and (
            not self.and_any_of or any(w in what for w in self.and_any_of)
        )


_PROBLEMS = frozenset({ReportClass.honesty, ReportClass.bug, ReportClass.friction})


#: The backfill rules, first match wins. Each has its own test and a row on docs/concepts/cases.md.
RULES: tuple[Rule, ...] = (
    Rule(
        "empty_answer_over_data", frozenset({ReportClass.honesty}), "false_absence",
        ("empty", "no results", "0 results", "zero results", "nothing found", "found nothing",
         "returned nothing", "no matches", "none found"),
        ("exist", "non-empty", "nonempty", "present", "memory", "there are", "has data"),
    ),
    Rule(
        "crash_trace", frozenset({ReportClass.bug, ReportClass.honesty}), "crash",
        ("traceback", "panicked", "segfault", "segmentation fault", "stack overflow", "crashed",
         "core dumped"),
    ),
    Rule(
        "stale_claim", _PROBLEMS, "stale_claim",
        ("stale",), ("claim", "lock", "lease", "still active", "still marked"),
    ),
    Rule(
        "overclaimed_verdict", frozenset({ReportClass.honesty}), "overclaimed_verdict",
        ("claimed success", "reported success", "claimed it passed", "said it passed", "false positive",
         "verdict was wrong", "claimed done"),
    ),
    Rule(
        "misrouted", _PROBLEMS, "wrong_route",
        ("misrouted", "wrong box", "wrong project", "wrong inbox", "routed to the wrong", "filed in the wrong"),
    ),
    Rule(
        "silently_dropped", _PROBLEMS, "silent_drop",
        ("silently dropped", "never arrived", "was dropped", "got dropped", "went missing", "was lost"),
    ),
    Rule(
        "outside_scope", _PROBLEMS, "scope_escape",
        ("outside the scope", "outside its scope", "outside the sandbox", "escaped the sandbox",
         "wrote outside", "outside the project"),
    ),
    Rule(
        "confusing_output", frozenset({ReportClass.friction}), "ux_confusion",
        ("confusing", "unclear", "misleading", "hard to read", "could not tell"),
    ),
)

class _ClassRules(msgspec.Struct, frozen=True):
    """The rules that reach one class, in table order, and one pattern that finds, in a text,
    the words any of them names (``found``)."""

    finder: re.Pattern[str]
    #: each word, and the shorter words of the rules it starts with (``claimed done`` holds ``claim``)
    implied: dict[str, frozenset[str]]
    rules: tuple[tuple[Rule, frozenset[str], frozenset[str] | None], ...]

    def found(self, what: str, m: re.Match[str] | None) -> set[str]:
        """Every word of these rules that occurs in ``what``, whose first hit is ``m``.

        The pattern finds the longest word starting at a position, through a tree of the words
        merged by their common beginnings (``e(?:mpty|xist)``), which the regex engine walks one
        branch at a time where a flat list of words is tried word by word at every position; each
        next search starts one character after the last hit, so words that overlap are all seen.
        Any other word starting at the same position is a beginning of the longest one:
        ``implied`` adds it. One search for a text that holds none (most), not one per rule."""
        search = self.finder.search
        implied = self.implied
        found: set[str] = set()
        while m is not None:
            found |= implied[m.group()]
            m = search(what, m.start() + 1)
        return found

    def decide(self, what: str, m: re.Match[str]) -> Rule | None:
        """The first rule (in table order) that applies to the lowercased ``what``, which the
        pattern has a hit in, ``m``: a text with none is answered by that one search."""
        found = self.found(what, m)
        for rule, any_of, and_any_of in self.rules:
            if not any_of.isdisjoint(found) and (and_any_of is None or not and_any_of.isdisjoint(found)):
                return rule
        return None


def _tree_pattern(words: Iterable[str]) -> str:
    """A regex matching the longest of ``words`` at a position, as a tree of their common beginnings."""
    tree: dict[str, Any] = {}
    for w in words:
        node = tree
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}
    return _branch(tree)


def _branch(node: dict[str, Any]) -> str:
    alts = [re.escape(ch) + _branch(sub) for ch, sub in sorted(node.items()) if ch]
    if not alts:
        return ""
    body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    if "" in node:  # a word ends here: a longer one is tried first, then this one
        return "(?:" + body + ")?"
    return body


def _class_rules(klass: str) -> _ClassRules:
    rules = [r for r in RULES if klass in r.classes]
    words = sorted({w for r in rules for w in (*r.any_of, *r.and_any_of)})
    return _ClassRules(
        re.compile(_tree_pattern(words), re.ASCII),  # plain words match the same; the engine runs a little faster
        {w: frozenset(v for v in words if w.startswith(v)) for w in words},
        tuple((r, frozenset(r.any_of), frozenset(r.and_any_of) if r.and_any_of else None) for r in rules),
    )


@functools.cache
def _by_class() -> dict[str, _ClassRules]:
    """Per class, the rules that reach it (see ``_ClassRules``).

    Compiled on the first letter that needs a rule, not at import: a session-start hook imports this
    module and reads no field report (~30 M instructions saved a call)."""
    return {k: _class_rules(k) for k in sorted({k for r in RULES for k in r.classes})}


RULE_NAMES: tuple[str, ...] = (
    "authored", "legacy_kind", "misdelivery_kind", *(r.name for r in RULES),
)


class _Text(msgspec.Struct):
    what: object = None
    misdelivery_kind: object = None


_decode_text: Callable[[bytes], _Text] = msgspec.json.Decoder(_Text).decode


def _text_of(letter: Letter) -> _Text:
    """The two fields from the whole line, for one msgspec cannot read as it stands."""
    data = letter.data()
    return _Text(data.get("what"), data.get("misdelivery_kind"))


#: Classes a backfill rule can ever apply to: other letters are never decoded again.
_RULE_CLASSES = frozenset({ReportClass.memory_misdelivery}).union(*(r.classes for r in RULES))


def symptom_rule(letter: Letter) -> tuple[str, str] | None:
    """(symptom, the rule that gave it) for a field report, or None: kindless.

    Receipts and engine letters' own fields are read as authored; nothing else is inferred for them.
    """
    s = letter.symptom
    if s is not None and s in _SYMPTOMS:
        return s, "authored"
    kind = letter.kind
    if kind is not None and kind in _SYMPTOMS:
        return kind, "legacy_kind"
    klass = letter.klass
    if klass not in _RULE_CLASSES or letter.agent == ENGINE_AGENT:
        return None
    try:
        text = _decode_text(letter.raw)
    except (msgspec.DecodeError, RecursionError):
        text = _text_of(letter)
    if klass == "memory_misdelivery":
        sub = text.misdelivery_kind if isinstance(text.misdelivery_kind, str) else kind
        mapped = MISDELIVERY_SYMPTOM.get(sub) if isinstance(sub, str) else None
        return (mapped, "misdelivery_kind") if mapped else None
    what = text.what
    if not isinstance(what, str):
        return None
    rules = _by_class()[klass]
    what = what.lower()
    m = rules.finder.search(what)  # no rule word (most texts): one search, no more calls
    if m is None:
        return None
    rule = rules.decide(what, m)
    return (rule.symptom, rule.name) if rule is not None else None


def symptom_of(letter: Letter) -> str | None:
    """A letter's symptom (see ``symptom_rule``), or None."""
    got = symptom_rule(letter)
    return got[0] if got else None


def fingerprint_of(letter: Letter) -> str | None:
    """The fingerprint of a letter (receipts are not witnesses: they have none)."""
    if letter.is_receipt:
        return None
    return fingerprint(tool_family(letter.tool), symptom_of(letter))
