"""The resident process: one warm c1 per index home, so that repeated ``c1 search`` and ``c1 status``
processes do not pay the start-up again.

Why (bench/cli_latency.py; the figures: docs/benchmarks.md, "From the shell"): once everything is
loaded a whole built-in search is a small part of what a fresh ``c1 search`` process costs, nearly all
of which is start-up: importing chromadb, onnxruntime, numpy and tokenizers, creating the ONNX session
and opening Chroma's client. No lazier import makes that fit in the 0.4 s aim — the ONNX session and
Chroma's client are needed by every search — so the loaded state is kept in a process that outlives
the command: the command itself then costs Python, the CLI's flag parsing and one round trip on a
Unix socket.

- :mod:`c1.daemon.protocol`: where the socket lives (a private runtime folder, one socket per
  home), the build id (c1's version and its source files), JSON-lines framing.
- :mod:`c1.daemon.client`: used by the commands; finds or starts the resident process, falls back
  to working in-process whenever it cannot be used (it never changes what a command prints).
- :mod:`c1.daemon.server`: the resident process (``python -m c1.daemon --home H``).

Rules: started on demand — by the first ``c1 search`` or ``c1 status``, or by ``c1 index`` as it begins
(once committed, it has the resident process open the collection and run one search on it, so that
the user's next search is answered warm; ``--watch`` asks again every ``daemon_idle / 2`` seconds,
so it does not idle out while watching: :func:`c1.daemon.client.kept_warm`); it loads the models (the
ONNX sessions, the o200k vocabulary) in a second thread while its first imports the rest; once it has
answered, it writes the collection's vector snapshot (:mod:`c1.store.flat`), so that the next fresh
process of the home searches it without importing chromadb at all (the largest part of its start:
docs/benchmarks.md, "Where the first search's time goes"); exits after
``daemon_idle`` seconds without a request (default 300),
when its socket is removed or replaced, or when a client of another build asks (version mismatch:
the new client starts a fresh one); answers only for the home it was started for; sees a re-index
(the manifest's generation counter, as every long-lived reader); a socket left by a killed process
is detected and replaced. ``--no-daemon`` (or ``daemon = false``, ``C1_DAEMON=0``) works in-process.
Only searches run by the built-in policy go through it: with a model server every turn is a model
call that costs seconds, so start-up is not what the user waits for.
"""
