"""Where ledgers live: the Store protocol and the file store, the memory store, and PostgreSQL."""
