"""``c1 serve``: vLLM with MXFP4 for the model plus the search API beside it; or the API alone."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

from c1.config import Settings
from c1.console import emit_json, err, escape
from c1.errors import C1Error


@dataclass(frozen=True)
class VllmFlags:
    model: str
    served_model_name: str | None
    host: str
    port: int | None
    """None: not given (8001)."""
    chroma_port: int
    quantize: str
    gpu_memory_utilization: float
    tensor_parallel_size: int
    lora: tuple[str, ...]
    seed: int
    ready_timeout: float
    rollout: bool = False
    max_lora_rank: int | None = None


@dataclass(frozen=True)
class ApiOptions:
    host: str
    port: int
    token: str | None
    max_concurrency: int
    timeout_s: float
    max_body: int
    verbose: bool

    def kwargs(self) -> dict:
        return {"host": self.host, "port": self.port, "token": self.token, "max_concurrency": self.max_concurrency,
                "timeout_s": self.timeout_s, "max_body": self.max_body, "verbose": self.verbose}


def run_serve(settings: Settings, vllm: VllmFlags, api: ApiOptions, *, dry_run: bool, json_out: bool,
              api_only: bool, no_api: bool) -> int:
    if api_only:
        from c1.api import serve_api

        if vllm.port is not None:
            raise C1Error(f"--port is vLLM's port; with --api-only there is no vLLM: give the search API's port "
                          f"with --api-port {vllm.port}")
        return serve_api(settings, **api.kwargs())
    from c1.model.launcher import run
    from c1.model.options import DEFAULT_PORT, ServeOptions, parse_lora
    from c1.model.plan import plan
    from c1.model.prepare import prepare

    opts = ServeOptions(
        model=vllm.model, served_model_name=vllm.served_model_name, host=vllm.host, port=vllm.port or DEFAULT_PORT,
        chroma_port=vllm.chroma_port, context_budget=settings.budget, gpu_memory_utilization=vllm.gpu_memory_utilization,
        tensor_parallel_size=vllm.tensor_parallel_size, lora=tuple(parse_lora(s) for s in vllm.lora), seed=vllm.seed,
        quantize=None if vllm.quantize == "none" else vllm.quantize, api_model=settings.model,
        rollout=vllm.rollout, max_lora_rank=vllm.max_lora_rank,
    )
    the_plan = plan(opts)
    if dry_run or json_out:
        if json_out:
            emit_json(the_plan.to_dict())
        else:
            print("\n".join(the_plan.describe()))
        return 0 if the_plan.ready else 2
    if the_plan.problems:  # before any download or conversion: nothing would run at the end of it
        raise C1Error(f"cannot serve: {the_plan.problems[0]['message']} (`c1 serve --dry-run` shows the plan)")
    the_plan = prepare(the_plan, progress=_conversion_progress())
    api_server = None
    if not no_api:
        from c1.api import make_server

        model_settings = replace(settings, base_urls=(the_plan.url,), model=the_plan.api_model, policy="llm")
        # bound now: a port clash fails before vLLM starts; a request's budget may not outgrow vLLM's window
        api_server = make_server(model_settings, **api.kwargs(), max_budget=the_plan.max_model_len - opts.reply_headroom)

    serving = threading.Event()

    def on_status(status) -> None:
        err().print(f"[dim]c1 serve:[/] {escape(status.message)}", soft_wrap=True)
        if status.state == "ready" and api_server is not None and not serving.is_set():
            serving.set()
            threading.Thread(target=api_server.serve_forever, daemon=True, name="c1-api").start()
            err().print(f"[dim]c1 serve:[/] search API on {escape(f'http://{api.host}:{api.port}/v1/search')}", soft_wrap=True)

    try:
        return run(the_plan, timeout_s=vllm.ready_timeout, on_status=on_status)
    finally:
        if api_server is not None:
            if serving.is_set():
                api_server.close()
            else:  # never served: shutdown() would wait for a loop that never ran
                api_server.server_close()
                api_server.service.close()


def _conversion_progress():
    """A progress callback for the one-off MXFP4 conversion (bytes done / total)."""
    state = {"pct": -10.0}

    def progress(done: int, total: int, name: str) -> None:
        pct = 100 * done / total if total else 100.0
        if pct - state["pct"] >= 5 or done >= total:
            state["pct"] = pct
            err().print(f"[dim]c1 serve:[/] converting experts to MXFP4: {pct:.0f}% ({escape(name)})", soft_wrap=True)

    return progress
