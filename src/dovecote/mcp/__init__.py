"""The MCP face: the agent-facing verbs as tools, inboxes and boxes as subscribable resources.

A surface like the CLI: it imports only the handle (``dovecote.handle.api``), the
typed verbs and the errors. ``server.build`` makes the server for one handle;
``http.app`` is its streamable-HTTP ASGI app (a bearer token per request),
``server.run_stdio`` serves one stdio connection (``dovecote mcp``).
"""
