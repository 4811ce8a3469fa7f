"""Full-text search over entity mail: the query, the SQLite index (a cache), its texts and items."""
