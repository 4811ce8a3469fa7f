"""The append-only JSONL ledger: append, lock, fsync, dedup, torn tails, incremental reads, group commit."""
