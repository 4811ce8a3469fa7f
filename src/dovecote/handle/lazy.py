"""Where each name the handle's module gives a face lives, for ``handle.api`` to import on first use.

Plain data, so that opening a handle (a hook's cold start) loads none of the ops modules these
answers are built in: a face that names one (its REST route's response type, its MCP output
schema) pays for that import, once.
"""

from __future__ import annotations

#: The typed answers a face names (its REST route's response type, its OpenAPI schema), by the ops module that
#: builds each: imported on first use, so a hook's cold start loads none of their modules.
RESULTS = {
    "BlockChange": "dovecote.ops.missions.blocks", "BlockListing": "dovecote.ops.missions.blocks",
    "MissionArchived": "dovecote.ops.missions.post", "MissionChain": "dovecote.ops.missions.post",
    "MissionListing": "dovecote.ops.missions.post", "MissionPosted": "dovecote.ops.missions.post",
    "Case": "dovecote.ops.cases.cases", "Cases": "dovecote.ops.cases.cases", "Claims": "dovecote.ops.cases.cases",
    "ReceiptFiled": "dovecote.ops.cases.cases", "MonitorAdded": "dovecote.ops.cases.monitors",
    "Monitors": "dovecote.ops.cases.monitors", "Sentinels": "dovecote.ops.cases.sentinels",
    "StaleCheck": "dovecote.ops.mail.stale", "Organized": "dovecote.ops.tree.organize",
    "Trackers": "dovecote.ops.delivery.trackers", "KeySet": "dovecote.ops.missions.gestures",
    "ReceiptImported": "dovecote.ops.missions.blocks", "Beat": "dovecote.ops.delivery.presence",
    "Presence": "dovecote.ops.delivery.presence", "HookRelayed": "dovecote.ops.cases.abandonment",
    "Status": "dovecote.ops.delivery.status", "Doctor": "dovecote.ops.admin.doctor", "Shown": "dovecote.ops.mail.show",
    "OutboxRow": "dovecote.ops.mail.outbox", "OutboxSent": "dovecote.ops.mail.outbox",
    "InboxView": "dovecote.ops.mail.inbox", "SearchMatch": "dovecote.ops.search.query",
    "SearchResult": "dovecote.ops.search.query", "Copied": "dovecote.ops.admin.store_copy",
    "Acked": "dovecote.ops.delivery.acks", "Transition": "dovecote.ops.mail.transitions",
    "Delivery": "dovecote.ops.mail.send", "ReportsFiled": "dovecote.ops.reports.report",
    "WaitResult": "dovecote.ops.mail.wait", "SweepAnswer": "dovecote.ops.reports.shapes",
    "VnextImported": "dovecote.ops.delivery.import_vnext", "LeaseListing": "dovecote.ops.leases.read",
    "LeaseTaken": "dovecote.ops.leases.take", "LeasesChanged": "dovecote.ops.leases.take",
    "PathsChecked": "dovecote.ops.leases.read", "Needs": "dovecote.ops.delivery.needs",
    "AgentMailImported": "dovecote.ops.agentmail.import_archive",
    "BoxAnswer": "dovecote.ops.reports.shapes", "DistributionAnswer": "dovecote.ops.reports.shapes",
    "IntakeAnswer": "dovecote.ops.delivery.shapes", "PassAnswer": "dovecote.ops.delivery.shapes",
    "SentAnswer": "dovecote.ops.delivery.shapes", "EntityRow": "dovecote.ops.agents.roster_use",
    "ProjectRow": "dovecote.ops.agents.roster_use", "Migrated": "dovecote.handle.home",
}
#: The rest of the handle a face names from here, defined beside what it needs and imported on first use as
#: ``RESULTS`` are: making, migrating and copying a home (``handle.home``), and what a removal found in use.
ELSEWHERE = {
    "init": "dovecote.handle.home", "migrate_store": "dovecote.handle.home", "copy_store": "dovecote.handle.home",
    "merge_ledgers": "dovecote.handle.home", "Use": "dovecote.ops.agents.roster_use",
}
