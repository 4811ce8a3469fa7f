"""The lifecycle diagram and table, drawn from ``derive/lifecycle.TRANSITIONS`` at build time.

The table is the law (a move it lacks is ``illegal_transition``), so the picture of it is never drawn by
hand: states are placed in columns by their distance from the first state of the table, each move between
two states is one arrow labelled with the letter kinds that make it, and a move that keeps the state (``seen``)
is written inside its state's box. A change to the table changes the page at the next build.
"""

from __future__ import annotations

from collections import deque
from html import escape

BOX_W, BOX_H, COL, ROW, PAD = 120, 52, 260, 120, 30


def _layout(table: dict[str, dict[str, str]]) -> dict[str, tuple[int, int]]:
    """Each state's box corner: its column is its distance from the first state, its row its order there."""
    first = next(iter(table))
    depth = {first: 0}
    todo = deque([first])
    while todo:
        state = todo.popleft()
        for target in table[state].values():
            if target not in depth:
                depth[target] = depth[state] + 1
                todo.append(target)
    for state in table:  # a state no move reaches still gets a place, after the others
        depth.setdefault(state, max(depth.values()) + 1)
    rows: dict[int, int] = {}
    at: dict[str, tuple[int, int]] = {}
    for state in table:
        d = depth[state]
        at[state] = (PAD + d * COL, PAD + rows.get(d, 0) * ROW)
        rows[d] = rows.get(d, 0) + 1
    return at


def _edges(table: dict[str, dict[str, str]]) -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = {}
    for state, moves in table.items():
        for kind, target in moves.items():
            if target != state:
                edges.setdefault((state, target), []).append(kind)
    return edges


def svg(table: dict[str, dict[str, str]]) -> str:
    """The state diagram as inline SVG (no script, no external file: the site works offline)."""
    at = _layout(table)
    edges = _edges(table)
    width = max(x for x, _ in at.values()) + BOX_W + PAD
    height = max(y for _, y in at.values()) + BOX_H + PAD + 20
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
             f'class="dovecote-lifecycle" style="max-width:{width}px;width:100%">',
             "<title>The lifecycle of an entity's item, from derive/lifecycle.TRANSITIONS</title>",
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="currentColor"/></marker></defs>']
    for (src, dst), kinds in edges.items():
        (x1, y1), (x2, y2) = at[src], at[dst]
        cx1, cy1, cx2, cy2 = x1 + BOX_W / 2, y1 + BOX_H / 2, x2 + BOX_W / 2, y2 + BOX_H / 2
        dx, dy = cx2 - cx1, cy2 - cy1
        length = max((dx * dx + dy * dy) ** 0.5, 1.0)
        shift = 7 if (dst, src) in edges else 0  # two moves between one pair of states: side by side
        ox, oy = -dy / length * shift, dx / length * shift
        # start and end on the boxes' edges, not their centres
        scale = min(BOX_W / 2 / abs(dx) if dx else 1e9, BOX_H / 2 / abs(dy) if dy else 1e9)
        sx, sy = cx1 + dx * scale + ox, cy1 + dy * scale + oy
        ex, ey = cx2 - dx * scale + ox, cy2 - dy * scale + oy
        label = " | ".join(kinds)
        parts.append(f'<line x1="{sx:.0f}" y1="{sy:.0f}" x2="{ex:.0f}" y2="{ey:.0f}" stroke="currentColor" '
                     f'marker-end="url(#arrow)"/>')
        # the label beside its arrow, on the arrow's left (a pair of opposite arrows: on either side)
        nx, ny = -dy / length, dx / length
        lx, ly = (sx + ex) / 2 + nx * 12, (sy + ey) / 2 + ny * 12 + 4
        side = "middle" if abs(dx) >= abs(dy) else ("end" if nx < 0 else "start")
        parts.append(f'<text x="{lx:.0f}" y="{ly:.0f}" text-anchor="{side}" font-size="12" '
                     f'fill="currentColor">{escape(label)}</text>')
    for state, (x, y) in at.items():
        final = not table[state]
        stays = [k for k, t in table[state].items() if t == state]
        parts.append(f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="8" fill="none" '
                     f'stroke="currentColor" stroke-width="{3 if final else 1.5}"/>')
        parts.append(f'<text x="{x + BOX_W / 2:.0f}" y="{y + (22 if stays else BOX_H / 2 + 5):.0f}" '
                     'text-anchor="middle" '
                     f'font-size="15" font-weight="bold" fill="currentColor">{escape(state)}</text>')
        if stays:
            parts.append(f'<text x="{x + BOX_W / 2:.0f}" y="{y + 40:.0f}" text-anchor="middle" '
                         f'font-size="11" fill="currentColor">{escape(", ".join(stays))}: stays</text>')
    parts.append("</svg>")
    return "".join(parts)


def table_markdown(table: dict[str, dict[str, str]]) -> str:
    """Every move of the table: from, letter kind, to; and the terminal states."""
    rows = ["| from | letter | to |", "|---|---|---|"]
    rows += [f"| `{state}` | `{kind}` | `{target}` |" for state, moves in table.items()
             for kind, target in moves.items()]
    terminal = [s for s, moves in table.items() if not moves]
    rows += ["", "Terminal (no move leaves them): " + ", ".join(f"`{s}`" for s in terminal) + "."]
    return "\n".join(rows) + "\n"


def lifecycle() -> str:
    """The diagram and the table of ``TRANSITIONS``, as the page shows them."""
    from dovecote.derive.lifecycle import TRANSITIONS

    table = {str(s): {str(k): str(t) for k, t in moves.items()} for s, moves in TRANSITIONS.items()}
    return f'<div class="dovecote-diagram">{svg(table)}</div>\n\n{table_markdown(table)}'
