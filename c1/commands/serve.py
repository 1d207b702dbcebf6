"""``c1 serve``: vLLM with MXFP4 for the model, plus the search API; or the API alone."""

from __future__ import annotations

import threading
from dataclasses import replace

from c1.config import Settings
from c1.console import emit_json, err
from c1.errors import C1Error


def run_serve(settings: Settings, opts, *, dry_run: bool, json_out: bool, api_only: bool, api_host: str,
              api_port: int, token: str | None, max_concurrency: int, search_timeout: float, no_api: bool,
              ready_timeout: float) -> int:
    if api_only:
        return _serve_api(settings, api_host, api_port, token, max_concurrency, search_timeout)
    from c1.serve.launcher import ServeError, plan, prepare, run

    try:
        the_plan = plan(opts)
    except ServeError as exc:
        raise C1Error(str(exc)) from None
    if dry_run or json_out:
        if json_out:
            emit_json(the_plan.to_dict())
        else:
            for line in the_plan.describe():
                print(line)
        return 0 if the_plan.ready else 2
    try:
        the_plan = prepare(the_plan, progress=_conversion_progress())
        started = threading.Event()

        def on_status(status) -> None:
            err().print(f"[dim]c1 serve:[/] {status.message}", soft_wrap=True)
            if status.state == "ready" and not no_api and not started.is_set():
                started.set()
                model_settings = replace(settings, base_urls=(the_plan.url,), model=the_plan.served_model_name,
                                         policy="llm")
                threading.Thread(
                    target=_serve_api, daemon=True, name="c1-api",
                    args=(model_settings, api_host, api_port, token, max_concurrency, search_timeout),
                ).start()

        return run(the_plan, timeout_s=ready_timeout, on_status=on_status)
    except ServeError as exc:
        raise C1Error(str(exc)) from None


def _serve_api(settings: Settings, host: str, port: int, token: str | None, max_concurrency: int, timeout: float) -> int:
    from c1.serve.api import serve_api

    err().print(f"[dim]c1 serve:[/] search API on http://{host}:{port}/v1/search", soft_wrap=True)
    serve_api(settings, host=host, port=port, token=token, max_concurrency=max_concurrency, timeout_s=timeout)
    return 0


def _conversion_progress():
    """A progress callback for the one-off MXFP4 conversion (bytes done / total)."""
    state = {}

    def progress(done: int, total: int, name: str) -> None:
        pct = 100 * done / total if total else 100
        last = state.get("pct", -10)
        if pct - last >= 5 or done >= total:
            state["pct"] = pct
            err().print(f"[dim]c1 serve:[/] converting experts to MXFP4: {pct:.0f}% ({name})", soft_wrap=True)

    return progress
