"""The roster (config.toml): parsing, its cache, locked edits, the ownership law, finding the home."""
