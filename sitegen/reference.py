"""The site's reference sections, drawn from the code at build time so they cannot drift.

Each function answers the markdown of one generated section: the REST routes from the OpenAPI document the
server serves at ``/openapi.json``, the MCP catalog of every role from the tables ``tools/list`` answers
from, the refusal keywords from ``errors.REASONS``, and the benchmark goals from ``bench/thresholds.toml``.
A page names the section it holds with a marker (``<!-- dovecote:NAME -->``); ``sitegen/hooks.py`` puts
the section in its place while MkDocs builds, so a page is as current as the code it is built from.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: The CLI's exit code for each kind of failure (``cli/output.py``): a refusal, and anything else.
EXIT_REFUSED, EXIT_FAIL = 2, 1


def cell(text: object) -> str:
    """Text safe inside a markdown table cell: pipes escaped, angle brackets as entities, one line."""
    return str(text).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def anchor(*parts: str) -> str:
    """A stable, readable anchor: lowercase words joined by hyphens (``POST /entities/{recipient}/messages``
    is ``post-entities-recipient-messages``)."""
    return "-".join(w for w in re.split(r"[^a-z0-9_]+", " ".join(parts).lower()) if w)


def schema_type(schema: dict[str, Any]) -> str:
    """A schema spelled briefly: a referenced type's name, a list's item type, an enumeration's values."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#schema-{anchor(name)})"
    if "anyOf" in schema:
        return " or ".join(schema_type(s) for s in schema["anyOf"] if s.get("type") != "null")
    if "enum" in schema:
        return "one of " + ", ".join(f"`{v}`" for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        return schema_type(schema.get("items", {})) + " list"
    if isinstance(kind, list):
        return " or ".join(kind)
    return str(kind)


def _fields(schema: dict[str, Any]) -> list[str]:
    """A table of an object schema's properties: name, type, required, description."""
    props: dict[str, Any] = schema.get("properties", {})
    if not props:
        return []
    required = set(schema.get("required", ()))
    rows = ["| field | type | required | description |", "|---|---|---|---|"]
    for name, prop in props.items():
        rows.append(f"| `{name}` | {cell(schema_type(prop))} | {'yes' if name in required else ''} | "
                    f"{cell(prop.get('description', ''))} |")
    return [*rows, ""]


def rest_routes() -> str:
    """Every route of the OpenAPI document: a summary table, then one section a route, then every schema."""
    from dovecote.http.openapi import API, document
    from dovecote.http.rest import ROUTES

    doc = document()
    access = {(r.method.lower(), API + r.template): r.access for r in ROUTES}
    ops = [(path, method, op) for path, methods in doc["paths"].items() for method, op in methods.items()]
    out = ["| route | what | who |", "|---|---|---|"]
    for path, method, op in ops:
        ref = anchor(method, path.removeprefix(API))
        out.append(f"| [`{method.upper()} {path}`](#{ref}) | {cell(op.get('summary', ''))} | "
                   f"{access.get((method, path), 'open')} |")
    out.append("")
    for path, method, op in ops:
        ref = anchor(method, path.removeprefix(API))
        out += [f"### `{method.upper()} {path}` {{ #{ref} }}", "", op.get("summary", ""), "",
                f"Who: `{access.get((method, path), 'open')}` (see [Who may call what](#who-may-call-what)).", ""]
        params = op.get("parameters", [])
        if params:
            out += ["| parameter | in | type | description |", "|---|---|---|---|"]
            out += [f"| `{p['name']}` | {p['in']} | {cell(schema_type(p.get('schema', {})))} | "
                    f"{cell(p.get('description', ''))} |" for p in params]
            out.append("")
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if body:
            out += ["Body (JSON):", ""] + (_fields(body) or [f"{schema_type(body)}.", ""])
        answers = [f"`{code}` {schema_type(r['content']['application/json']['schema'])}"
                   if "application/json" in r.get("content", {}) and not code.startswith(("4", "5"))
                   else f"`{code}`" for code, r in op.get("responses", {}).items()]
        out += ["Answers: " + ", ".join(answers) + ".", ""]
    out += ["## Schemas", "", "The bodies the routes take and answer, as the OpenAPI document declares them.", ""]
    for name, schema in doc["components"]["schemas"].items():
        out += [f"### `{name}` {{ #schema-{anchor(name)} }}", "", cell(schema.get("description", "")), ""]
        out += _fields(schema) or [f"Type: {schema_type(schema)}.", ""]
    return "\n".join(out) + "\n"


def _wire_tokens(tool: Any) -> int:
    from dovecote.mcp.server import wire

    return len(wire([tool])) // 4


def mcp_summary() -> str:
    """Each role's catalog: how many tools, and its ``tools/list`` answer in tokens (characters / 4)."""
    from dovecote.mcp.server import tokens
    from dovecote.mcp.tools import ROLES, catalog

    rows = ["| catalog | tools | tokens |", "|---|---|---|"]
    rows += [f"| [{role}](#catalog-{role}) | {len(catalog(role))} | {tokens(role):,} |" for role in ROLES]
    return "\n".join(rows) + "\n"


def mcp_catalog() -> str:
    """Every role's tools with their token counts, then each tool: roles, description, views, input, output."""
    from dovecote.mcp.server import listing
    from dovecote.mcp.tools import ROLES, TOOLS

    out: list[str] = []
    listed = {role: {t.name: t for t in listing(role)} for role in ROLES}
    for role in ROLES:
        out += [f"### The {role} catalog {{ #catalog-{role} }}", "", "| tool | tokens | description |",
                "|---|---|---|"]
        out += [f"| [`{name}`](#tool-{anchor(name)}) | {_wire_tokens(t)} | {cell(t.description or '')} |"
                for name, t in listed[role].items()]
        out.append("")
    out += ["## Tools", ""]
    for name, tool in TOOLS.items():
        roles = [r for r in ROLES if name in listed[r]]
        shown = listed[roles[-1]][name]
        out += [f"### `{name}` {{ #tool-{anchor(name)} }}", "", cell(shown.description or ""), "",
                "In the catalogs of: " + ", ".join(f"[{r}](#catalog-{r})" for r in roles) + ".", ""]
        views = [v.name for v in getattr(tool, "views", ())]
        if views:
            out += ["Views: " + ", ".join(f"`{v}`" for v in views) + ".", ""]
        out += ["Input:", ""]
        out += _fields(shown.input_schema) or ["No arguments.", ""]
        keys = (shown.output_schema or {}).get("required", [])
        out += ["Output: `structuredContent`" + (", always with " + ", ".join(f"`{k}`" for k in keys)
                                                 if keys else ", an object") + ".", ""]
    return "\n".join(out) + "\n"


def errors() -> str:
    """Every refusal keyword: its HTTP status, the CLI's exit code, what MCP answers, and what it means."""
    from dovecote.errors import REASONS

    rows = ["| keyword | HTTP | exit | meaning |", "|---|---|---|---|"]
    rows += [f"| <a id=\"{k}\"></a>`{k}` | {status} | {EXIT_REFUSED} | {cell(meaning)} |"
             for k, (status, meaning) in REASONS.items()]
    rows += [f"| <a id=\"io_error\"></a>`io_error` | 503 | {EXIT_FAIL} | the store could not be read or written "
             "(an I/O failure, not a rule); try again |",
             f"| <a id=\"internal_error\"></a>`internal_error` | 500 | {EXIT_FAIL} | a bug: one line, never a "
             "traceback (`DOVECOTE_DEBUG=1` shows it) |"]
    return "\n".join(rows) + "\n"


def crash_points() -> str:
    """The crash-point table from the counts of the last full sweep (``docs/crash_points.json``)."""
    import json

    rows = json.loads((ROOT / "docs" / "crash_points.json").read_text())
    faults = {r["operation"].removesuffix(" (I/O faults)"): r for r in rows
              if r["operation"].endswith(" (I/O faults)")}
    crashes = [r for r in rows if not r["operation"].endswith(" (I/O faults)")]
    out = ["| operation | crash points | crashes run (4 power-cut modes) | I/O faults run |", "|---|---|---|---|"]
    for r in crashes:
        f = faults.get(r["operation"])
        out.append(f"| {r['operation']} | {r['points']} | {r['crashes']} | {f['crashes'] if f else '-'} |")
    total = sum(r["crashes"] for r in crashes), sum(r["crashes"] for r in faults.values())
    out += ["", f"{len(crashes)} operations, {sum(r['points'] for r in crashes)} crash points: {total[0]} crashes "
                f"and {total[1]} I/O faults in a full sweep."]
    return "\n".join(out) + "\n"


def bench_figures() -> str:
    """The guard's rule, its choices and its runs, and the last full measurement, as ``bench/README.md`` has them
    (that file keeps every measurement; the site shows these, from its section on the guard up to the first
    sub-section of "Last measured"), headings one level down to sit under the page's own."""
    lines = (ROOT / "bench" / "README.md").read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("## The guard"))
    last = next(i for i, ln in enumerate(lines) if ln.startswith("## Last measured"))
    end = next((i for i, ln in enumerate(lines) if i > last and ln.startswith("#")), len(lines))
    return "\n".join("#" + ln if ln.startswith("## ") else ln for ln in lines[start:end]) + "\n"


def bench_goals() -> str:
    """The goals ``make bench-check`` holds dovecote to, as ``bench/thresholds.toml`` writes them."""
    table = tomllib.loads((ROOT / "bench" / "thresholds.toml").read_text())
    word = {"at_most": "at most", "at_least": "at least", "exact": "exactly"}
    out = [f"Tolerance before a second measurement: {table['tolerance']:.0%}.", "",
           "| check | what | goal |", "|---|---|---|"]
    for name, check in table.items():
        if isinstance(check, dict):
            unit = "×" if check["on"] == "ratio" else f" {check.get('unit', '')}"
            out.append(f"| `{name}` | {cell(check['what'])} | {word[check['direction']]} {check['goal']}{unit} |")
    return "\n".join(out) + "\n"
