"""The ``c1`` command: a Ctrl-C while the CLI is still being imported exits 130 in one line, as it does
once a command runs (the imports take a few tenths of a second, and a traceback there is what a user
pressing Ctrl-C at once would see)."""

import sys


def run() -> None:
    from c1 import exiting, one_blas_thread

    exiting.install()
    one_blas_thread()
    try:
        from c1.cli import main
    except KeyboardInterrupt:
        sys.stderr.write("c1: interrupted\n")
        raise SystemExit(130) from None
    exiting.leaving(main)


if __name__ == "__main__":
    run()
