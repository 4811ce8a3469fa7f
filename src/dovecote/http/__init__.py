"""The HTTP face (``dovecote serve``): REST, live events and the Human View over one handle.

Like the CLI it imports only the handle (``dovecote.handle.api``) and leaf modules
(``errors``, ``_version``); see ``app.create_app``.
"""
