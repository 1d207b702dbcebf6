"""c1: a retrieval subagent for the command line."""

import os

__version__ = "0.1.0"


def one_blas_thread() -> None:
    """Run numpy's BLAS on one thread in c1's own processes (the CLI, the resident process), unless the user
    set it: c1's matrix products are small (a query against a few thousand vectors), and OpenBLAS's worker
    threads spin while they wait. Measured (whole ``c1 search --no-daemon`` processes, identical results):
    a scan of 8k snapshot vectors 7.8 → 0.35 ms; a FinanceBench search 4.2-4.5 → 3.6-3.75 CPU s. Must run
    before numpy is imported."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
