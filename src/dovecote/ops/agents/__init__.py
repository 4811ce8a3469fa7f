"""Agents: tokens, hooks and their configuration, the letter feed, roster use."""
