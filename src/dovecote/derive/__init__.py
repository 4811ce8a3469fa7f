"""Pure folds over letters: no file, no clock, no network (DESIGN 3)."""
