"""The options of ``c1 serve``, declared once (c1/commands/option_fields.py): :class:`ServeFlags`, whose
defaults are the model server's (:class:`c1.model.settings.ServeOptions`) and the search API's
(:mod:`c1.service.search_service`), and which builds the model server's options. c1/cli.py makes the Typer
options from it. Light, as ``c1 --help`` reads it: nothing beyond the standard library and c1's light modules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from c1.commands.option_fields import option
from c1.config import Settings
from c1.model.settings import CHROMA_DEFAULT_PORT, DEFAULT_PORT, ServeOptions, parse_lora
from c1.service.search_service import DEFAULT_HOST, DEFAULT_MAX_BODY, DEFAULT_MAX_CONCURRENCY, DEFAULT_TIMEOUT_S
from c1.service.search_service import DEFAULT_PORT as DEFAULT_API_PORT


@dataclass(frozen=True)
class ServeFlags:
    """The options of ``c1 serve`` beside the agent's, declared once (c1/cli.py makes the flags): the model
    server's defaults are :class:`c1.model.settings.ServeOptions`', the search API's
    :mod:`c1.service.search_service`'s."""

    vllm_model: str = option("--vllm-model", ServeOptions.model, "Hub id or local checkpoint folder (gpt-oss family) for vLLM.")
    served_model_name: Optional[str] = option("--served-model-name", None, "Name clients use [default: the model].")
    host: str = option("--host", ServeOptions.host, "vLLM bind address.")
    port: Optional[int] = option("--port", None, f"vLLM port (never Chroma's {CHROMA_DEFAULT_PORT}) [default: {DEFAULT_PORT}].",
                                 min=1, max=65535)
    """None: not given (8001; with --api-only, given by mistake for --api-port)."""
    chroma_port: int = option("--chroma-port", CHROMA_DEFAULT_PORT, "The Chroma server port to keep clear.")
    quantize: str = option("--quantize", ServeOptions.quantize, "mxfp4 (convert BF16 experts once, cached) | none.")
    gpu_memory_utilization: float = option("--gpu-memory-utilization", ServeOptions.gpu_memory_utilization, min=0.1, max=1.0)
    tensor_parallel_size: int = option("--tensor-parallel-size", ServeOptions.tensor_parallel_size, min=1)
    lora: Optional[list[str]] = option("--lora", None, "LoRA adapter NAME=PATH (repeatable).")
    rollout: bool = option("--rollout", False, "Serve as c1 train rl's rollout server: adapters hot-loaded at run time, processed log-probabilities.")
    max_lora_rank: Optional[int] = option("--max-lora-rank", None, "Largest LoRA rank to serve [default: the adapters', else 16].", min=1)
    dry_run: bool = option("--dry-run", False, "Print the plan and the vLLM command; start nothing.")
    ready_timeout: float = option("--ready-timeout", 1800.0, "Seconds to wait for vLLM.")
    api_only: bool = option("--api-only", False, "Serve only the search API (built-in policy, or --base-url).")
    no_api: bool = option("--no-api", False, "Serve only the model.")
    api_host: str = option("--api-host", DEFAULT_HOST, "Search API bind address (non-loopback needs --token).")
    api_port: int = option("--api-port", DEFAULT_API_PORT, "Search API port.", min=1, max=65535)
    token: Optional[str] = option("--token", None, "Bearer token required by the search API.", envvar="C1_SERVE_TOKEN")
    max_concurrency: int = option("--max-concurrency", DEFAULT_MAX_CONCURRENCY, "Agent runs at once: a search takes one per parallel run (more get 429).", min=1)
    timeout: float = option("--timeout", DEFAULT_TIMEOUT_S, "Seconds per search (then 504).", min=1)
    max_body: int = option("--max-body", DEFAULT_MAX_BODY, "Largest request body in bytes (then 413).", min=256)
    verbose: bool = option(("--verbose", "-v"), False, "Log every request on stderr.")

    def api_kwargs(self) -> dict:
        """The search API's arguments (:func:`c1.service.http_api.serve_api`, :func:`~c1.service.http_api.make_server`)."""
        return {"host": self.api_host, "port": self.api_port, "token": self.token, "max_concurrency": self.max_concurrency,
                "timeout_s": self.timeout, "max_body": self.max_body, "verbose": self.verbose}

    def serve_options(self, settings: Settings) -> ServeOptions:
        """The model server's options: these flags with the agent's budget, model name and seed."""
        return ServeOptions(
            model=self.vllm_model, served_model_name=self.served_model_name, host=self.host,
            port=self.port or DEFAULT_PORT, chroma_port=self.chroma_port, context_budget=settings.budget,
            gpu_memory_utilization=self.gpu_memory_utilization, tensor_parallel_size=self.tensor_parallel_size,
            lora=tuple(parse_lora(s) for s in self.lora or ()), seed=settings.seed or 0,
            quantize=None if self.quantize == "none" else self.quantize, api_model=settings.model,
            rollout=self.rollout, max_lora_rank=self.max_lora_rank,
        )
