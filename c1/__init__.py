"""c1: a retrieval subagent for the command line."""

import os

__version__ = "0.1.0"


def one_blas_thread() -> None:
    """Run numpy's BLAS on one thread in c1's own processes (the CLI, the resident process), unless the user
    set it: c1's matrix products are small (a query against a few thousand vectors), and OpenBLAS's worker
    threads spin while they wait: a whole FinanceBench ``c1 search --no-daemon`` took 0.84 of the CPU with
    one thread against two, with identical results (docs/benchmarks.md). Must run before numpy is imported."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
