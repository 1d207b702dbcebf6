from c1 import one_blas_thread

one_blas_thread()

from c1.daemon.server import main  # noqa: E402 - after the BLAS setting, which numpy reads as it loads

main()
