"""Cases: receipts, escalation, claims, engine letters, monitors, sentinels, abandonment."""
