"""Serving the model: the vLLM launcher (:mod:`.launcher`), GPU checks (:mod:`.gpu`) and MXFP4
conversion (:mod:`.mxfp4`, :mod:`.quantize`). The search API is :mod:`c1.serve.api`.

Nothing is imported here on purpose: ``import c1.model.launcher`` stays cheap (standard library
only), and numpy is loaded only by the quantizer.
"""
