"""Lease folds: advisory file leases of a project, derived from its lease letters and the clock; path globs."""
