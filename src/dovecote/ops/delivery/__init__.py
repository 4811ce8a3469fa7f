"""Delivery: work mail, intake, acks, the mailman, notify, presence, trackers, status, vNext import."""
