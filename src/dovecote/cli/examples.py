"""The example that ends each command's help: one or more lines that run as printed.

Keyed by the command's words under ``dovecote`` (``""`` is ``dovecote`` itself). The lines of one
entry run in order in one shell, so a later line may use what an earlier one printed (``$id``).
Each runs in a home ``dovecote demo`` built (its projects atlas and beacon, its entities ent_ops
and ent_builder, its fixed report ids), found through ``$DOVECOTE_HOME``; the mission examples
name a letter file, ``letter.json``, the first letter of mission msn_0123456789ab on block sb_alpha
of atlas. ``tests/cli/test_cli_examples.py`` runs every one. Plain data: read only when a help is
printed, so it costs a run of a command nothing.
"""

from __future__ import annotations

_SEND = 'id=$(dovecote send --recipient ent_builder --sender ent_ops --subject "disk at 91%")'
_MISSION = "msn_0123456789ab"

EXAMPLES: dict[str, tuple[str, ...]] = {
    "": ("dovecote sweep --include-all --limit 5",),
    # Field reports
    "report": ('dovecote report --tool seek --class bug --what "returned nothing" --repo atlas',),
    "distribute": ("dovecote distribute",),
    "sweep": ("dovecote sweep --include-all --limit 5",),
    "box": ("dovecote box project:atlas --json",),
    "receipt": ("dovecote receipt --answers 5b45bd684447 --disposition fixed --ref abc123",),
    "receipt import": (f"dovecote receipt import {_MISSION}",),
    # Cases
    "cases": ("dovecote cases",),
    "case": ("dovecote case fp:seek/false_absence",),
    "sentinels": ("dovecote sentinels",),
    "claims": ("dovecote claims",),
    "monitors": ("dovecote monitors",),
    "monitor": ("dovecote monitor add nightly --expect tool=backup,class=win --every 1d --grace 2h",),
    "monitor add": ("dovecote monitor add nightly --expect tool=backup,class=win --every 1d --grace 2h",),
    # Mailboxes
    "send": ('dovecote send --recipient ent_builder --sender ent_ops --subject "rebuild" --category directive',),
    "draft": ('dovecote draft --recipient ent_ops --sender ent_builder --subject "notes attached"',),
    "outbox": ("dovecote outbox send --sender ent_builder",),
    "outbox send": ("dovecote outbox send --sender ent_builder",),
    "inbox": ("dovecote inbox ent_builder --current-tic 110 --detailed",),
    "show": (_SEND, 'dovecote show ent_builder "$id"'),
    "search": ("dovecote search rebuild --entity-id ent_builder",),
    "wait": ('(sleep 1; dovecote send --recipient ent_builder --subject "ping") &',
             "dovecote wait ent_builder --timeout 30"),
    "view": ("dovecote view ent_builder --current-tic 110",),
    "organize": ("dovecote organize ent_builder --current-tic 110",),
    "stale-check": ("dovecote stale-check --current-tic 110",),
    "import": ("dovecote view ent_builder", "dovecote import inbox-tree .dovecote/views/agent-mailboxes"),
    "import inbox-tree": ("dovecote view ent_builder", "dovecote import inbox-tree .dovecote/views/agent-mailboxes"),
    "import vnext": ("mkdir -p plane-a/mailbox", "dovecote import vnext plane-a/mailbox"),
    "import agent-mail": ("dovecote import agent-mail ~/agent-mail", "dovecote import agent-mail ~/agent-mail --write"),
    # Mail lifecycle
    "seen": (_SEND, 'dovecote seen ent_builder "$id"'),
    "unseen": (_SEND, 'dovecote seen ent_builder "$id" && dovecote unseen ent_builder "$id"'),
    "claim": (_SEND, 'dovecote claim ent_builder "$id"'),
    "complete": (_SEND, 'dovecote seen ent_builder "$id" && dovecote claim ent_builder "$id"',
                 'dovecote complete ent_builder "$id"'),
    "defer": (_SEND, 'dovecote defer ent_builder "$id" --until-tic 120'),
    "undefer": (_SEND, 'dovecote defer ent_builder "$id" --until-tic 120', 'dovecote undefer ent_builder "$id"'),
    "nack": (_SEND, 'dovecote seen ent_builder "$id" && dovecote nack ent_builder "$id" --reason "not mine"'),
    # Delivery
    "intake": ("mkdir -p intake/pending", "dovecote intake --dir intake"),
    "mailman": ("mkdir -p intake/pending", "dovecote mailman --dir intake"),
    "ack": ('dovecote send --recipient ent_builder --sender ent_ops --subject "nightly" --type task '
            '--work-item-id wi-1 --ack-required | tee sent.txt',
            'dovecote ack ent_builder "$(tail -n 1 sent.txt | cut -d" " -f1)" --status accepted'),
    "trackers": ("dovecote trackers --entity-id ent_builder",),
    "status": ("dovecote status",),
    # Missions
    "mission": (f"dovecote mission show {_MISSION}",),
    "mission post": ("dovecote block add sb_alpha --project atlas",
                     "dovecote mission post --file letter.json --as-project atlas --agent runner-1"),
    "mission show": (f"dovecote mission show {_MISSION}",),
    "mission archive": (f"dovecote mission archive {_MISSION}",),
    "missions": ("dovecote missions --project atlas",),
    "block": ("dovecote block add sb_alpha --project atlas",),
    "block add": ("dovecote block add sb_alpha --project atlas",),
    "block bump": ("dovecote block add sb_alpha --project atlas", "dovecote block bump sb_alpha --project atlas"),
    "blocks": ("dovecote blocks --project atlas",),
    # Server and agents
    "serve": ("dovecote serve --port 8765",),
    "mcp": ("dovecote mcp --as ent_builder < /dev/null",),
    "token": ("dovecote token issue ent_builder --role agent",),
    "token issue": ("dovecote token issue ent_builder --role agent",),
    "token list": ("dovecote token list",),
    "token revoke": ("dovecote token issue ent_builder --role agent",
                     'dovecote token revoke "$(dovecote token list | cut -f1 | tail -n 1)"'),
    "hooks": ("dovecote hooks install --agent claude-code --entity-id ent_builder --dry-run",),
    "hooks install": ("dovecote hooks install --agent claude-code --entity-id ent_builder --dry-run",),
    "hook": ("echo '{\"session_id\": \"s1\"}' | dovecote hook session-start --entity ent_builder",),
    "hook session-start": ("echo '{\"session_id\": \"s1\"}' | dovecote hook session-start --entity ent_builder",),
    "hook prompt": ("echo '{\"session_id\": \"s1\"}' | dovecote hook prompt --entity ent_builder",),
    "hook stop": ("echo '{\"session_id\": \"s1\"}' | dovecote hook stop --entity ent_builder",),
    "hook post-tool": ("echo '{\"session_id\": \"s1\", \"tool_name\": \"seek\"}' "
                       "| dovecote hook post-tool --watch seek",),
    "presence": ("dovecote presence --active-minutes 30",),
    "presence list": ("dovecote presence list --active-minutes 30",),
    "presence beat": ("dovecote presence beat --agent runner-1 --session s1",),
    "lease": ("dovecote lease take ent_builder 'src/**' --project atlas --ttl 3600 --reason 'auth refactor'",),
    "lease take": ("dovecote lease take ent_builder 'src/**' --project atlas --ttl 3600 --reason 'auth refactor'",),
    "lease renew": ("dovecote lease take ent_builder docs --project atlas",
                    "dovecote lease renew ent_builder --project atlas --ttl 7200"),
    "lease release": ("dovecote lease take ent_builder docs --project atlas",
                      "dovecote lease release ent_builder --project atlas"),
    "lease list": ("dovecote lease list --project atlas",),
    "lease check": ("dovecote lease take ent_builder 'src/**' --project atlas",
                    "dovecote lease check src/app.py --entity-id ent_builder --project atlas"),
    "lease guard": ("git -C repos/atlas init -q", "dovecote lease guard install --project atlas"),
    "lease guard install": ("git -C repos/atlas init -q", "dovecote lease guard install --project atlas"),
    # Data and stores
    "doctor": ("dovecote doctor",),
    "verify": ("dovecote verify",),
    "copy": ("dovecote db migrate --url postgresql://127.0.0.1/dovecote_example",
             "dovecote copy --to postgresql://127.0.0.1/dovecote_example"),
    "db": ("dovecote db migrate --url postgresql://127.0.0.1/dovecote_example",),
    "db migrate": ("dovecote db migrate --url postgresql://127.0.0.1/dovecote_example",),
    "merge-driver": ("cp .dovecote/spool.jsonl ours.jsonl && touch base.jsonl",
                     "dovecote merge-driver base.jsonl ours.jsonl .dovecote/spool.jsonl"),
    # Setup
    "init": ("dovecote --home ./team/.dovecote init --owner-root .",),
    "demo": ("dovecote demo ./demo-home",),
    "project": ("dovecote project list",),
    "project add": ("mkdir -p repos/zephyr", "dovecote project add zephyr --root repos/zephyr --alias z"),
    "project list": ("dovecote project list",),
    "project remove": ("dovecote project remove api-server",),
    "entity": ("dovecote entity list",),
    "entity add": ("dovecote entity add ent_reviewer --role reviewer",),
    "entity remove": ("dovecote entity add ent_temp", "dovecote entity remove ent_temp"),
    "entity list": ("dovecote entity list",),
    "gesture-key": ("dovecote gesture-key set",),
    "gesture-key set": ("dovecote gesture-key set",),
}
