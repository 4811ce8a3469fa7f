"""Delivery folds: trackers (delivery, ack, notify), and the letters a vNext directory becomes."""
