"""The agent-mail profile: mcp_agent_mail's core tools served by dovecote, over stdio or streamable HTTP.

Law: a call is decoded by its tool's argument struct (``agentmail_tools``), made
on the handle off the event loop (the roster read again first, as every server
call is), and answered in their wire shapes, so an agent written for
mcp_agent_mail switches by changing its MCP URL: a dict result is
``structuredContent`` and the same JSON as text; a list is ``{"result": [...]}``
structured, its text the bare array (``search_messages``: the wrapped object, as
theirs); a failure is ``isError`` with one text ``Error calling tool '<tool>':
<message>``, where the message is their pydantic sentence for a malformed
argument, their ``Invalid argument value: ...`` for a bad value, and dovecote's
``<keyword>: <detail>`` for every refusal, never a traceback.

Over HTTP (``mcp.http.agent_mail_app``: ``dovecote serve`` mounts it at ``/agent-mail/mcp``) the
transport is theirs: stateless, plain JSON answers, a bearer token optional. A
request's bearer token is its connection principal; without one, a loopback
server admits it as the person at this machine (``principal`` None), as
mcp_agent_mail admits local callers, and each call names its agent's token.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
import msgspec
import orjson
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from dovecote._version import __version__
from dovecote.errors import Refusal, StoreError
from dovecote.handle.api import Dovecote, Principal
from dovecote.http.runner import Pool
from dovecote.mcp.agentmail_tools import CATALOG, AmTool
from dovecote.mcp.server import PRINCIPAL_KEY, WORKERS, error_text

log = logging.getLogger(__name__)

PATH = "/agent-mail/mcp"
PROFILE = "agent-mail"


def listing() -> list[types.Tool]:
    return [types.Tool(name=t.name, description=t.description, input_schema=t.input_schema())
            for t in CATALOG.values()]


def tokens() -> int:
    """The catalog's ``tools/list`` size in tokens, counted as ``mcp.server.tokens`` counts (characters / 4)."""
    from dovecote.mcp.server import wire

    return len(wire(listing())) // 4


def decode(tool: AmTool, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments as their tool takes them; a malformed one is their pydantic-style sentence."""
    try:
        args = msgspec.convert(arguments, tool.args, strict=False)
    except msgspec.ValidationError as e:
        text = str(e)
        where = text.rpartition(" - at `$.")[2].rstrip("`") if " - at `$." in text else ""
        raise ArgumentError(f"1 validation error for call[{tool.name}]\n{where}\n  {text}") from None
    return msgspec.structs.asdict(args)


class ArgumentError(Exception):
    """A malformed argument, said as their server says it."""


def failure(tool: str, e: BaseException) -> str:
    """The one text of a failed call: ``Error calling tool '<tool>': <message>``."""
    if isinstance(e, ArgumentError):
        message = str(e)
    elif isinstance(e, Refusal) and e.reason == "invalid_field":
        message = f"Invalid argument value: {e.reason}: {e.detail}. Check that all parameters have valid values."
    else:
        message = error_text(e)
    return f"Error calling tool '{tool}': {message}"


def rendered(tool: AmTool, result: Any) -> types.CallToolResult:
    """Their wire shape of a result (see the module doc)."""
    if not tool.listing:
        return types.CallToolResult(content=[types.TextContent(type="text", text=orjson.dumps(result).decode())],
                                    structured_content=result)
    wrapped = {"result": result}
    shown = wrapped if tool.name == "search_messages" else result
    content: list[types.ContentBlock] = (
        [types.TextContent(type="text", text=orjson.dumps(shown).decode())] if result else [])
    return types.CallToolResult(content=content, structured_content=wrapped)


class AgentMailFace:
    """The profile's MCP server over one handle; ``principal`` binds every call's connection (stdio)."""

    def __init__(self, dc: Dovecote, *, principal: Principal | None = None, where: str = "") -> None:
        self.dc = dc
        self.principal = principal
        self.bound = principal is not None
        self.where = where
        self.workers = Pool(WORKERS, "dovecote-agent-mail")
        self.server: Server[Any] = Server(
            "dovecote-agent-mail", version=__version__,
            instructions="mcp_agent_mail's core tools over dovecote: send each call your registration_token "
                         "(sender_token for sends).",
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
        )
        self._tools = listing()

    async def run(self, fn: Any, *args: Any) -> Any:
        return await self.workers(fn, *args)

    def who(self, ctx: ServerRequestContext[Any, Any]) -> Principal | None:
        """The connection's principal: the bound one, else the HTTP middleware's (None: tokenless loopback)."""
        if self.bound:
            return self.principal
        request = ctx.request
        state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
        found = state.get(PRINCIPAL_KEY)
        return found if isinstance(found, Principal) else None

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = CATALOG.get(params.name)
        if tool is None:
            return _error(f"Unknown tool: {params.name}")
        try:
            args = decode(tool, dict(params.arguments or {}))
            if tool.name == "health_check":
                args["_where"] = self.where
            result = await self.workers(self._run, tool, self.who(ctx), args)
        except Exception as e:
            if not isinstance(e, (Refusal, StoreError, ArgumentError)):
                log.exception("agent-mail tool %s failed", params.name)
            return _error(failure(params.name, e))
        return rendered(tool, result)

    def _run(self, tool: AmTool, principal: Principal | None, args: dict[str, Any]) -> Any:
        self.dc.refresh()  # a project or agent another process added is seen at once
        return tool.call(self.dc, principal, args)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def _serve_stdio(face: AgentMailFace) -> None:
    async with stdio_server() as (read, write):
        await face.server.run(read, write, face.server.create_initialization_options())


def run_stdio(dc: Dovecote, principal: Principal) -> None:
    """Serve the profile over stdin/stdout (``dovecote mcp --profile agent-mail``)."""
    anyio.run(_serve_stdio, AgentMailFace(dc, principal=principal, where="stdio"))
