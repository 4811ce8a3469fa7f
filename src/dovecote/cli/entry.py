"""The console script. It answers ``--version`` before importing anything
heavy, a repeated read from its cached rendering, a simple ``inbox`` call
without Typer (``quick``), and hands anything else to the Typer app; it maps
errors to exit codes.

After a read answered on one of those quick paths, the console script
(``script``) leaves with ``os._exit`` once its output is flushed: tearing down
the interpreter would only free, one by one, the tens of thousands of objects
the read built (the fold's snapshot) and the modules it loaded, about a tenth
of such a call's instructions, with nothing left to write. ``main`` itself
returns normally, so an in-process caller (the tests) keeps its interpreter.

No traceback ever reaches a user: a refusal exits 2, an I/O failure exits 1
(``io_error``), and anything else is a bug, reported on one line as
``internal_error`` with exit 1 (``DOVECOTE_DEBUG=1`` re-raises it for a
developer).
"""

from __future__ import annotations

import os
import sys

#: Set once ``main`` answered without Typer: nothing is left for the interpreter to do but free memory.
_answered_quick = False


def script() -> None:
    """The console script and ``python -m dovecote``: ``main``, then, after a quick answer, a quick exit."""
    main()
    if _answered_quick:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # e.g. a closed pipe: what was printed did not all arrive
            os._exit(1)
        os._exit(0)


def _quick() -> None:
    global _answered_quick
    _answered_quick = True


def main() -> None:
    argv = sys.argv[1:]
    if argv == ["--version"]:
        from dovecote._version import __version__

        sys.stdout.write(f"dovecote {__version__}\n")
        _quick()
        return
    from dovecote.cli.output_cache import _split_home, try_cached

    home, rest = _split_home(argv)
    if rest[:1] == ["hook"] and not {"--help", "-h"} & set(rest):  # an agent's hook: no Typer, never fails
        from dovecote.cli.hookrun import main as hook_main

        hook_main(home, rest[1:])
        _quick()
        return
    if try_cached(argv):
        _quick()
        return
    from dovecote.cli.output import EXIT_FAIL, EXIT_REFUSED, error, internal_error
    from dovecote.errors import DovecoteError, Refusal

    try:
        from dovecote.cli.searchpath import try_search

        if try_search(argv):  # a simple ``search``: no Typer, no Rich, not the whole handle
            _quick()
            return
        from dovecote.cli.quick import try_quick

        if try_quick(argv):  # a simple ``inbox``: no Typer, no Rich
            _quick()
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
