"""The PostgreSQL store: schema and migrations, a box's state, guarded writes, COPY, LISTEN/NOTIFY."""
