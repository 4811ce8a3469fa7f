"""Case intelligence folds: symptoms and fingerprints, cases, claims vs measures, monitors."""
