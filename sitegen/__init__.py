"""The documentation site's build: MkDocs hooks and the sections they draw from the code (not shipped)."""
