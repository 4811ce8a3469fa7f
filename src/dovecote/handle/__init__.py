"""The one handle (Dovecote): builds the Context, exposes the typed verbs; the remote callers' rule."""
