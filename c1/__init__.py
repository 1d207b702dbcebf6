"""c1: a retrieval subagent for the command line."""

import os

__version__ = "0.1.0"


def one_blas_thread() -> None:
    """Run numpy's BLAS on one thread in c1's own processes (the CLI, the resident process), unless the user
    set it: c1's matrix products are small (a query against a few thousand vectors), and OpenBLAS's worker
    threads spin while they wait, so a second thread costs CPU and changes no result (a whole ``c1 search
    --no-daemon`` A/B; docs/benchmarks.md, "One BLAS thread"). Must run before numpy is imported."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
