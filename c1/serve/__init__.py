"""The search API over HTTP (:mod:`.api`). Model serving (vLLM, MXFP4) is :mod:`c1.model`."""
