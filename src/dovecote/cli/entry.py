"""The console script. It answers ``--version`` before importing anything
heavy, then hands over to the Typer app and maps errors to exit codes.
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv == ["--version"]:
        from dovecote._version import __version__

        sys.stdout.write(f"dovecote {__version__}\n")
        return
    from dovecote.cli.fastpath import try_cached

    if try_cached(argv):
        return
    from dovecote.cli.output import EXIT_FAIL, EXIT_REFUSED, error
    from dovecote.errors import DovecoteError, Refusal

    try:
        from dovecote.cli.app import run

        run()
    except Refusal as r:
        error(r.message())
        sys.exit(EXIT_REFUSED)
    except DovecoteError as e:
        error(str(e))
        sys.exit(EXIT_FAIL)
    except BrokenPipeError:  # e.g. `dovecote sweep --json | head`
        sys.stderr.close()
        sys.exit(EXIT_FAIL)


if __name__ == "__main__":
    main()
