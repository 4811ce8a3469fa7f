"""The Gas City face: ``dovecote-gc-mail``, a mail provider for ``GC_MAIL=exec:dovecote-gc-mail``."""
