"""The one table of input limits: every text, list and object field of every verb takes its bound from here.

Law: a verb field that holds a string, a list or an object has a bound from
this table (``tests/handle/test_verb_limits.py`` walks every field of every verb and
fails on one without), so the CLI, MCP (stdio or HTTP) and REST refuse the
same over-long value the same way: ``too_large``, nothing written. msgspec
enforces the bound while it decodes (``verbs.decode``), and the JSON schemas
(MCP tools, the OpenAPI) carry it as ``maxLength``/``maxItems``/``maxProperties``.

A server face also bounds the request as a whole (``MAX_BODY`` bytes of body,
``MAX_QUERY`` bytes of query string), which is what bounds the free-form JSON
of the two fields that take an object whole (a hook's payload, a mission
letter), with ``MAX_DEPTH`` levels of nesting at most.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

#: A name that becomes a directory (an entity, a project, a block, a monitor): ``addresses.check_name``'s bound.
NAME = 128
#: An identifier: an item id or prefix, a thread, a work item, an idempotency key, a session, a cursor, a time.
ID = 256
#: A subject line (a longer one belongs in the body; an imported one is kept and cut when shown).
SUBJECT = 200
#: A short free text: a reason, a next action, a constraint, a search query, an expectation.
TEXT = 2000
#: A command line (a sentinel probe).
COMMAND = 1024
#: A path on this machine.
PATH = 4096
#: A body of text (a message body, what a report says): the roster's default ``body_hard_limit``, which may set
#: it lower (a body over ``body_inline_max`` goes to the artifact store). A server face's request is smaller still.
BODY = 16 << 20
#: The entries of a list (answers, constraints, artifacts, aliases) or the keys of an object.
ITEMS = 1000

#: The largest request body a server face (REST, MCP over HTTP) reads, in bytes (a message with a long body fits;
#: a file dump does not): the one request limit of both, so MCP stores nothing REST would refuse.
MAX_BODY = 1 << 20
#: The longest query string a server face reads, in bytes (the parameters of a GET are short fields).
MAX_QUERY = 16384
#: The longest request head (request line and headers) a server face reads, in bytes.
MAX_HEAD = 65536
#: The deepest nesting of JSON an input may have: what a letter can still be written with (orjson's limit).
MAX_DEPTH = 254

Id = Annotated[str, Meta(max_length=ID)]
Text = Annotated[str, Meta(max_length=TEXT)]
Body = Annotated[str, Meta(max_length=BODY)]
PathText = Annotated[str, Meta(max_length=PATH)]
