"""The command-line face: thin wrappers over ``dovecote.handle.api``."""
