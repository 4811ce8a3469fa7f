"""Entity mail: send, drafts, the inbox audit, show, the guarded lifecycle moves, wait, stale."""
