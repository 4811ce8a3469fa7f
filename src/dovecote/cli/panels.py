"""Where each top-level command is listed in ``dovecote --help``: its panel, by what a person came to do.

Plain data, read by ``app`` (which sets each command's ``rich_help_panel``) and by the help's
formatter (``boundary``, which orders the panels and their commands as written here), so the
grouping costs no import of a command module. Every top-level command and group is in exactly one
panel (``tests/cli/test_cli_help.py``); a panel stays short enough to read at a glance.
"""

from __future__ import annotations

#: panel title -> the commands it lists, in the order shown
PANELS: dict[str, tuple[str, ...]] = {
    "Field reports": ("report", "distribute", "sweep", "box", "receipt"),
    "Cases": ("cases", "case", "sentinels", "claims", "monitors", "monitor"),
    "Mailboxes": ("send", "draft", "outbox", "inbox", "show", "search", "wait",
                  "view", "organize", "stale-check", "import"),
    "Mail lifecycle": ("seen", "unseen", "claim", "complete", "defer", "undefer", "nack"),
    "Delivery": ("intake", "mailman", "ack", "trackers", "status"),
    "Missions": ("mission", "missions", "block", "blocks"),
    "Server and agents": ("serve", "mcp", "token", "hooks", "hook", "presence", "lease"),
    "Data and stores": ("doctor", "verify", "copy", "db", "merge-driver"),
    "Setup": ("init", "demo", "project", "entity", "gesture-key"),
}

#: command name -> its panel
PANEL_OF: dict[str, str] = {name: panel for panel, names in PANELS.items() for name in names}


def order(panel: str, name: str) -> tuple[int, int]:
    """Where ``name`` sorts in the help: its panel's place, then its own place in that panel
    (a command no panel names sorts last, in a panel of its own, so it still shows)."""
    panels = list(PANELS)
    if panel not in PANELS:
        return (len(panels), 0)
    names = PANELS[panel]
    return (panels.index(panel), names.index(name) if name in names else len(names))
