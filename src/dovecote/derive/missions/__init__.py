"""Mission folds: the mission letter's schema and rules, chains and heads, the block registry."""
