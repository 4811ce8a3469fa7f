"""How mcp_agent_mail's names become dovecote's: project slugs, agent entity ids, integer ids.

Law: each mapping is one function here, used by the agent-mail MCP profile and by
anything that imports their archives, so an agent registered over the profile and
the same agent imported from an archive land in one box.

- A project is the roster project named by its slug (``slugify``: their rule, lower
  case, every run outside ``a-z0-9`` one ``-``).
- An agent is the entity ``<slug>.<Name>`` (``entity_id``): the name kept as
  registered, after its project's slug and a dot. A slug never holds a dot, so the
  first dot splits it back (``split_entity``), and one name in two projects is two
  entities. When the two would pass the 128 characters an entity id may have, the
  slug is shortened and a hash of it added, so the id stays unique.
- A letter id is 12 hex digits (48 bits): their integer ids are ``int(id, 16)``
  (``int_id``) and back ``f"{n:012x}"`` (``letter_id``), exact both ways. Agents
  and projects get integers the same way, from the first 12 hex digits of the
  SHA-256 of their entity id or slug (``hashed_int``): stable, no table kept.
"""

from __future__ import annotations

import re

from dovecote.errors import Refusal
from dovecote.model.addresses import check_name
from dovecote.model.ids import ID_LENGTH, LETTER_ID_PATTERN, line_id

#: The longest entity id (``model.addresses``), and the digits of a shortened slug's hash.
MAX_ID = 128
HASH_DIGITS = 10
#: The largest letter id as an integer: 12 hex digits.
MAX_LETTER = 16**ID_LENGTH - 1
_RUNS = re.compile(r"[^a-z0-9]+")
_LETTER = re.compile(LETTER_ID_PATTERN)
_SLUG = re.compile(r"[a-z0-9-]+")


def slugify(human_key: str) -> str:
    """Their project slug of a path or key: lower case, each run outside ``a-z0-9`` one ``-``, trimmed."""
    return _RUNS.sub("-", human_key.lower()).strip("-") or "project"


def entity_id(slug: str, name: str) -> str:
    """The entity of agent ``name`` in project ``slug``: ``<slug>.<name>`` (see the module doc)."""
    check_name(name, "agent name")
    if len(name) > MAX_ID - HASH_DIGITS - 3:
        raise Refusal("invalid_name", f"agent name {name[:20]!r}... is over {MAX_ID - HASH_DIGITS - 3} characters")
    whole = f"{slug}.{name}"
    if len(whole) > MAX_ID:
        keep = MAX_ID - len(name) - HASH_DIGITS - 2
        whole = f"{slug[:keep].rstrip('-')}-{line_id(slug.encode())[:HASH_DIGITS]}.{name}"
    return check_name(whole, "entity id")


def split_entity(entity: str) -> tuple[str, str] | None:
    """(slug, name) of an agent entity (a shortened slug as it is in the id); None for another entity."""
    slug, dot, name = entity.partition(".")
    return (slug, name) if dot and name and _SLUG.fullmatch(slug) else None


def int_id(letter: str) -> int:
    """The integer id of a letter id (12 hex digits)."""
    if not _LETTER.fullmatch(letter):
        raise Refusal("invalid_field", f"{letter!r} is not a letter id (12 lowercase hex digits)")
    return int(letter, 16)


def letter_id(n: int) -> str:
    """The letter id of an integer id; ``invalid_field`` outside 0 .. 16**12 - 1."""
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_LETTER:
        raise Refusal("invalid_field", f"message_id {n!r} is not a message id (0 to {MAX_LETTER})")
    return f"{n:0{ID_LENGTH}x}"


def hashed_int(key: str) -> int:
    """A stable integer for an agent (its entity id) or a project (its slug): the id its text would have as a
    letter line (48 bits of its SHA-256), read as an integer."""
    return int(line_id(key.encode()), 16)


#: The words of a generated name (adjective + noun, as theirs are made; these lists are dovecote's own).
ADJECTIVES = ("Amber", "Azure", "Bold", "Brisk", "Calm", "Cedar", "Clear", "Copper", "Crimson", "Dusky", "Fern",
              "Frost", "Gold", "Granite", "Hazel", "Indigo", "Ivory", "Jade", "Lunar", "Maple", "Misty", "Olive",
              "Quiet", "Rapid", "Russet", "Sable", "Silver", "Solar", "Swift", "Teal")
NOUNS = ("Anchor", "Badger", "Beacon", "Brook", "Canyon", "Cliff", "Comet", "Delta", "Falcon", "Fjord", "Forge",
         "Glade", "Harbor", "Heron", "Island", "Lantern", "Marsh", "Meadow", "Orchard", "Otter", "Pine", "Prairie",
         "Quarry", "Ridge", "River", "Summit", "Thicket", "Valley", "Willow", "Wren")


def generated_name(taken: set[str], pick: int) -> str:
    """An adjective+noun name not in ``taken`` (compared case-insensitively), starting at the ``pick``-th pair.

    ``invalid_name`` once every pair is taken in the project (900 agents).
    """
    pairs = len(ADJECTIVES) * len(NOUNS)
    low = {t.lower() for t in taken}
    for step in range(pairs):
        i = (pick + step) % pairs
        name = ADJECTIVES[i // len(NOUNS)] + NOUNS[i % len(NOUNS)]
        if name.lower() not in low:
            return name
    raise Refusal("invalid_name", f"every one of the {pairs} generated names is taken in this project; give a name")
