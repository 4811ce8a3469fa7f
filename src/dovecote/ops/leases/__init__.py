"""Advisory file leases: take, renew and release (guarded writes), the listing and the commit check, the guard."""
