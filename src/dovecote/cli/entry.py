"""The console script. It answers ``--version`` before importing anything
heavy, a repeated read from its cached rendering, a simple ``inbox`` call
without Typer (``quick``), and hands anything else to the Typer app; it maps
errors to exit codes.

No traceback ever reaches a user: a refusal exits 2, an I/O failure exits 1
(``io_error``), and anything else is a bug, reported on one line as
``internal_error`` with exit 1 (``DOVECOTE_DEBUG=1`` re-raises it for a
developer).
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv == ["--version"]:
        from dovecote._version import __version__

        sys.stdout.write(f"dovecote {__version__}\n")
        return
    from dovecote.cli.output_cache import _split_home, try_cached

    home, rest = _split_home(argv)
    if rest[:1] == ["hook"] and not {"--help", "-h"} & set(rest):  # an agent's hook: no Typer, never fails
        from dovecote.cli.hookrun import main as hook_main

        hook_main(home, rest[1:])
        return
    if try_cached(argv):
        return
    from dovecote.cli.output import EXIT_FAIL, EXIT_REFUSED, error, internal_error
    from dovecote.errors import DovecoteError, Refusal

    try:
        from dovecote.cli.searchpath import try_search

        if try_search(argv):  # a simple ``search``: no Typer, no Rich, not the whole handle
            return
        from dovecote.cli.quick import try_quick

        if try_quick(argv):  # a simple ``inbox``: no Typer, no Rich
            return
        from dovecote.cli.app import run

        run()
    except Refusal as r:
        error(r.message())
        sys.exit(EXIT_REFUSED)
    except DovecoteError as e:  # a StoreError: the store could not be read or written
        error(f"io_error: {e}")
        sys.exit(EXIT_FAIL)
    except BrokenPipeError:  # e.g. `dovecote sweep --json | head`
        sys.stderr.close()
        sys.exit(EXIT_FAIL)
    except OSError as e:
        error(f"io_error: {e}")
        sys.exit(EXIT_FAIL)
    except Exception as e:  # the last resort: a bug must not print a traceback
        if os.environ.get("DOVECOTE_DEBUG"):
            raise
        internal_error(e)
        sys.exit(EXIT_FAIL)


if __name__ == "__main__":
    main()
