"""Serving Context-1: MXFP4 conversion (:mod:`.mxfp4`, :mod:`.quantize`), GPU checks
(:mod:`.gpu`) and the vLLM launcher (:mod:`.launcher`).

Nothing is imported here on purpose: ``import c1.serve.launcher`` stays cheap (standard library
only), and numpy is loaded only by the quantizer.
"""
