"""The /inbox folder tree: the view (a cache), organize, adopting moves, importing a tree."""
