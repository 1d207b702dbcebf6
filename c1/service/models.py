"""The models a search loads besides its collection (the built-in embedder, the cross-encoder, the o200k
vocabulary), loaded ahead of the first question: all of them by the resident process as it starts
(:func:`load_models`), the ONNX ones in a thread by a search in a process of its own (:func:`load_models_aside`).
Each is loaded once per process and the search then uses those very objects."""

from __future__ import annotations

from c1.config import Settings

LOAD_IMPORTS = ("numpy", "onnxruntime", "tokenizers", "regex", "c1.pinned", "c1.tokens", "c1.store.embedders",
                "c1.retrieval.rerankers")
"""What :func:`load_models` needs, imported before it runs in a thread of its own (the resident process's
warm-up, c1/daemon/server.py): it then imports nothing, so it never imports at the same time as the
thread that imports chromadb (two threads importing numpy at once can fail with 'partially initialized
module'; a test checks that it imports nothing)."""


def load_models(settings: Settings, embedder) -> list[str]:
    """Load what a first search of ``settings`` needs besides the collection, as a later search finds it
    loaded: the built-in embedder's ONNX session and a first embedding, the cross-encoder's session where
    ``--rerank`` may use it, the o200k vocabulary that counts the context. Each is loaded once per process
    (the search then uses these very objects); what failed is returned, and the search that needs it
    reports it as it would have."""
    from c1.tokens import count_tokens

    return _loaded([*_model_steps(settings, embedder), lambda: count_tokens("warm up")])


def _model_steps(settings: Settings, embedder) -> list:
    """The ONNX models a search of ``settings`` loads: the built-in embedder (with a first embedding), then
    the cross-encoder where ``--rerank`` may use it."""
    from c1.store.embedders import OnnxEmbedder
    from c1.retrieval.rerankers import warm_up

    steps = [lambda: embedder.embed_queries(["warm up"])] if isinstance(embedder, OnnxEmbedder) else []
    return steps + [warm] if (warm := warm_up(settings.rerank)) is not None else steps


def _loaded(steps: list) -> list[str]:
    """Run each step; what failed (the search that needs it reports it: EmbedderError, TokenizerError, ...)."""
    problems = []
    for step in steps:
        try:
            step()
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{type(exc).__name__}: {exc}")
    return problems


def load_models_aside(settings: Settings):
    """A ``--no-daemon`` search loads its ONNX models (0.1 + 0.3 s, mostly free of the interpreter lock) in a
    thread, begun before the collection opens so that they load beside it and the o200k vocabulary (0.13 s,
    holding the lock); returns the embedder it loads, for the corpus (None: the corpus makes its own and
    reports why it cannot). Not a daemon, so a search that ends at once waits for it rather than tear the
    interpreter down under onnxruntime (that crashed it). A failure is the search's to report when it needs it."""
    import threading

    from c1.store.embedders import embedder_for, recorded_embedder

    try:
        if recorded_embedder(settings) is None:
            return None  # no collection, or an empty or damaged one: the corpus says so at once
        embedder = embedder_for(settings)
    except Exception:  # noqa: BLE001 - the corpus reports it
        return None
    if steps := _model_steps(settings, embedder):
        threading.Thread(target=_loaded, args=(steps,), name="c1-load-models").start()
    return embedder
