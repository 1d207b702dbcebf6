"""Serving the model (``c1 serve``): vLLM for Context-1 with MXFP4 experts. The search API is
:mod:`c1.service.http_api`.

- :mod:`.settings`: what the server is run with (:class:`~.settings.ServeOptions`), checked, and the ``vllm serve``
  command it makes.
- :mod:`.plan`: everything decided before anything runs (``--dry-run``); GPU verdicts from :mod:`.gpu`.
- :mod:`.prepare`: download and the one-off MXFP4 conversion (:mod:`.quantize`, packing in :mod:`.mxfp4`).
- :mod:`.launcher`: run it: :mod:`.process` supervises the child and its signals, :mod:`.ready` waits
  until it serves the model.
- :mod:`.errors`: what stops it, one class per cause.
- :mod:`.harmony`: what the model is sent: chat messages as gpt-oss's harmony messages and tokens, as vLLM
  renders them (the agent's token count, SFT's samples and RL's prompts read it).

Nothing is imported here on purpose: ``import c1.model.launcher`` stays cheap (standard library
only), and numpy is loaded only by the quantizer.
"""
