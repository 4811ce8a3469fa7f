"""Use cases: the only layer that combines a store with the folds.

Each module holds one use case; the faces call them through ``api.Dovecote``.
"""
