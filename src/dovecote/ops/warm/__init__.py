"""Warm and persisted folds: the per-handle registry and each fold kept fed (inbox, cases, trackers, sweep)."""
