"""Leaf helpers: files and fsync, digests, times. No dovecote imports."""
