"""The MCP server over one handle: tools from ``tools.TOOLS``, resources, and subscriptions.

Built on the SDK's low-level ``Server`` (public API): it takes each tool's
JSON schema as given, so the schemas are exactly the typed verbs'. The rules:

- Every call is decoded by its verb, checked against the read-only deny list,
  and made on the handle **off the event loop** (a bounded thread pool,
  ``http.runner.Pool``, as the REST face's), so one slow fsync never stalls the
  other connections and the thread count never grows with the number of
  agents. ``wait`` has a pool of its own: a blocked wait never takes a
  writer's thread.
- A ``Refusal`` is ``isError`` with text ``<keyword>: ...``; a ``StoreError``
  is ``io_error: ...``; anything else is ``internal_error`` with no traceback.
- Resources ``inbox://{entity}`` and ``box://{address}`` are read with the same
  authorization as the tools. Subscribers of both protocol eras are told
  ``notifications/resources/updated`` when the box's ledger grows, by whom
  ever (``watch.Watcher``: one task, a stat per watched box per tick).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError

from dovecote import verbs
from dovecote._version import __version__
from dovecote.errors import Refusal, StoreError
from dovecote.handle.api import Dovecote, Principal
from dovecote.http.runner import Pool
from dovecote.mcp.tools import TOOLS, Tool, Views, catalog, refuse_if_read_only, role_of
from dovecote.mcp.watch import Watcher
from dovecote.model.results import builtins
from dovecote.model.textsafe import one_line

log = logging.getLogger(__name__)

#: How many handle calls run at once (threads: as many as REST's, ``Dovecote.CALLS_AT_ONCE``), and
#: how many waits may block at once.
WORKERS = Dovecote.CALLS_AT_ONCE
WAITERS = 64
#: Where an HTTP face leaves the principal it authenticated (``scope["state"]``).
PRINCIPAL_KEY = "dovecote.principal"

TEMPLATES = [
    types.ResourceTemplate(name="inbox", uri_template="inbox://{entity}", mime_type="application/json",
                           description="An entity's inbox (what the inbox tool answers)."),
    types.ResourceTemplate(name="box", uri_template="box://{address}", mime_type="application/json",
                           description="A box's listing: home, project:NAME or entity:ID."),
]


def listing(role: str) -> list[types.Tool]:
    """The ``tools/list`` answer of ``role``'s catalog (``tools.catalog``)."""
    return [types.Tool(name=t.name, description=t.describe(role), input_schema=t.input_schema(role),
                       output_schema=t.output) for t in catalog(role)]


def tokens(role: str) -> int:
    """The size of ``role``'s ``tools/list`` answer in tokens, as the budget counts them: characters / 4 of the
    JSON as the server sends it (compact, as the SDK serializes a result)."""
    return len(wire(listing(role))) // 4


def wire(tools: list[types.Tool]) -> str:
    """The tools as they go over the wire: compact JSON, fields left unset omitted."""
    return json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
                      separators=(",", ":"), ensure_ascii=False)


def error_text(e: BaseException) -> str:
    """The one line a failed call shows: the refusal keyword first, never a traceback."""
    if isinstance(e, Refusal):
        return e.message()
    if isinstance(e, StoreError):
        return f"io_error: {e}"
    if isinstance(e, OSError):  # a disk that failed under a cache or view write: as the CLI and REST say it
        return f"io_error: {e.strerror or e}"
    return f"internal_error: an unexpected {type(e).__name__}; the server's log has the details"


class Face:
    """The MCP face of one handle: ``server`` is the SDK server to run on a transport.

    ``principal`` binds every connection to one identity (stdio); without it
    each request must carry one (the HTTP app's middleware puts it in the
    request's state). ``read_only`` refuses every tool in the deny list.
    """

    def __init__(
        self, dc: Dovecote, *, principal: Principal | None = None, read_only: bool = False, poll: float = 0.1
    ) -> None:
        self.dc = dc
        self.principal = principal
        self.read_only = read_only
        #: no session outlives its request (``mcp.http.app``): nothing to send a notification through
        self.stateless = False
        self.workers = Pool(WORKERS, "dovecote-mcp")
        self.waiters = Pool(WAITERS, "dovecote-mcp-wait")
        self.bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self.bus)
        self.watcher = Watcher(self._stamp, self._updated, poll=poll)
        #: 2025-era subscribers: URI -> connection -> the session to notify through.
        self._legacy: dict[str, dict[object, Any]] = {}
        self.server: Server[Any] = Server(
            "dovecote", version=__version__, lifespan=self._lifespan,
            instructions="Mail for agents: inbox, show, move (seen is explicit), send, wait. An argument a tool's "
                         "schema does not list is refused (unknown_field).",
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_list_resources=self._list_resources, on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource, on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe, on_subscriptions_listen=self._listen_handler,
        )
        #: Each role's tools/list answer, built when that role first asks (a stdio face serves one role).
        self._tools: dict[str, list[types.Tool]] = {}

    @asynccontextmanager
    async def _lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with self.watcher.running():
            yield {}

    # -- who is calling ---------------------------------------------------------

    def who(self, ctx: ServerRequestContext[Any, Any]) -> Principal:
        """The principal of this request: the bound one, else the one the HTTP middleware authenticated."""
        if self.principal is not None:
            return self.principal
        request = ctx.request
        state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
        found = state.get(PRINCIPAL_KEY)
        if not isinstance(found, Principal):
            raise Refusal("unauthorized", "this connection carries no token (Authorization: Bearer <token>)")
        return found

    async def run(self, fn: Callable[..., Any], *args: Any, limiter: Pool | None = None) -> Any:
        return await (limiter or self.workers)(fn, *args)

    # -- tools -------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        role = role_of(self._who_or_mcp_error(ctx))
        if role not in self._tools:
            self._tools[role] = listing(role)
        return types.ListToolsResult(tools=self._tools[role])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        listed = TOOLS.get(params.name)
        try:
            if listed is None:
                raise Refusal("invalid_field", f"no tool named {params.name!r} (tools/list names them)")
            tool, arguments = listed.pick(params.arguments or {})
            result = await self.call(tool, self.who(ctx), arguments)
        except Exception as e:
            if not isinstance(e, (Refusal, StoreError)):
                log.exception("tool %s failed", params.name)
            return types.CallToolResult(content=[types.TextContent(type="text", text=one_line(error_text(e)))],
                                        is_error=True)
        # a tool's line may quote a letter (show's subject): one escaped line, as every text an agent reads
        return types.CallToolResult(content=[types.TextContent(type="text", text=one_line(tool.text(result)))],
                                    structured_content=result)

    async def call(self, listed: Tool | Views, principal: Principal, arguments: dict[str, Any]) -> dict[str, Any]:
        """One tool call: pick the view, default whose box to the caller's own, decode, refuse a write on a
        read-only face, run on the handle off the loop. A tool outside the principal's catalog is called all the
        same: ``remote`` refuses it."""
        tool, arguments = listed.pick(arguments)
        tool.refuse_omitted(arguments)
        v = verbs.decode(tool.verb, tool.own_entity(principal, arguments))
        refuse_if_read_only(tool.name, v, self.read_only)
        limiter = self.waiters if tool.name == "wait" else self.workers
        # the typed answer as plain data, the one encoding the CLI's --json and REST's bodies are too
        result: dict[str, Any] = builtins(await self.run(tool.call, self.dc, principal, v, limiter=limiter))
        return result

    # -- resources -------------------------------------------------------------------

    async def _list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        p = self._who_or_mcp_error(ctx)
        entities = [p.entity] if p.role != "operator" else [e.id for e in self.dc.entities()]
        return types.ListResourcesResult(resources=[
            types.Resource(name=f"inbox {e}", uri=f"inbox://{e}", mime_type="application/json") for e in entities
        ])

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        p = self._who_or_mcp_error(ctx)
        tool, arguments = _resource(params.uri)
        try:
            data = await self.call(tool, p, arguments)
        except (Refusal, StoreError) as e:
            raise MCPError(types.INVALID_PARAMS, error_text(e)) from None
        text = orjson.dumps(data).decode()
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, mime_type="application/json", text=text)]
        )

    def _who_or_mcp_error(self, ctx: ServerRequestContext[Any, Any]) -> Principal:
        try:
            return self.who(ctx)
        except Refusal as e:
            raise MCPError(types.INVALID_REQUEST, error_text(e)) from None

    async def _watchable(self, ctx: ServerRequestContext[Any, Any], uri: str) -> str:
        """The box address ``uri`` watches, once the caller may read it (the same rule as reading)."""
        tool, arguments = _resource(uri)
        p = self._who_or_mcp_error(ctx)
        try:
            if tool.name == "inbox":
                Dovecote.authorize(p, "inbox", arguments["entity_id"])
                return f"entity:{arguments['entity_id']}"
            box = verbs.decode(verbs.Box, arguments)
            if box.address.startswith("entity:"):
                Dovecote.authorize(p, "show", box.address.partition(":")[2])
            return box.address
        except Refusal as e:
            raise MCPError(types.INVALID_PARAMS, error_text(e)) from None

    # -- subscriptions: 2025-era subscribe/unsubscribe, 2026-era listen --------------------

    def _stateful(self) -> None:
        """Refuse a subscription on a stateless server: its session ends with the request."""
        if self.stateless:
            refused = Refusal("unsupported", "this server runs several workers and keeps no MCP session between "
                                             "requests, so it cannot notify; call wait instead")
            raise MCPError(types.INVALID_REQUEST, error_text(refused))

    async def _subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        self._stateful()
        address = await self._watchable(ctx, params.uri)
        sessions = self._legacy.setdefault(params.uri, {})
        if _connection(ctx) not in sessions:
            await self.run(self.watcher.watch, params.uri, address)
        sessions[_connection(ctx)] = ctx.session
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        if self._legacy.get(params.uri, {}).pop(_connection(ctx), None) is not None:
            self.watcher.unwatch(params.uri)
        return types.EmptyResult()

    async def _listen_handler(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        self._stateful()
        uris = list(params.notifications.resource_subscriptions or [])
        watched = []
        try:
            for uri in uris:
                address = await self._watchable(ctx, uri)
                await self.run(self.watcher.watch, uri, address)
                watched.append(uri)
            return await self._listen(ctx, params)
        finally:
            for uri in watched:
                self.watcher.unwatch(uri)

    def _stamp(self, address: str) -> tuple[int, int]:
        return self.dc.stamp(address)

    async def _updated(self, uri: str) -> None:
        """Tell every subscriber of ``uri``, in both eras, that it changed."""
        await self.bus.publish(ResourceUpdated(uri=uri))
        for key, session in list(self._legacy.get(uri, {}).items()):
            try:
                await session.send_resource_updated(uri)
            except Exception:  # a closed connection: forget it
                if self._legacy[uri].pop(key, None) is not None:
                    self.watcher.unwatch(uri)


def _connection(ctx: ServerRequestContext[Any, Any]) -> object:
    """The connection a request came on: the SDK makes a session object per request, over one connection.

    The SDK has no public name for it yet, so its private attribute is read, falling back to the session.
    """
    return getattr(ctx.session, "_connection", ctx.session)


def _resource(uri: str) -> tuple[Tool | Views, dict[str, Any]]:
    """The tool and arguments that read resource ``uri``; an unknown scheme is a JSON-RPC error."""
    scheme, sep, rest = uri.partition("://")
    if sep and rest and scheme == "inbox":
        return TOOLS["inbox"], {"entity_id": rest}
    if sep and rest and scheme == "box":
        return TOOLS["box"], {"address": rest}
    raise MCPError(types.INVALID_PARAMS, f"invalid_field: {uri!r} is not inbox://ENTITY or box://ADDRESS")


def build(dc: Dovecote, *, principal: Principal | None = None, read_only: bool = False) -> Face:
    """The MCP face of ``dc``; ``principal`` binds every request to one identity (stdio)."""
    return Face(dc, principal=principal, read_only=read_only)


async def serve_stdio(face: Face) -> None:
    async with stdio_server() as (read, write):
        await face.server.run(read, write, face.server.create_initialization_options())


def run_stdio(dc: Dovecote, principal: Principal, *, read_only: bool = False) -> None:
    """Serve one MCP connection over stdin/stdout until the client closes it (``dovecote mcp``)."""
    anyio.run(serve_stdio, build(dc, principal=principal, read_only=read_only))
