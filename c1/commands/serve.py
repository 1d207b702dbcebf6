"""``c1 serve``: vLLM with MXFP4 for the model plus the search API beside it; or the API alone. Its options are
:class:`~c1.commands.serve_flags.ServeFlags`; the model server and the search API load inside :func:`run_serve`."""

from __future__ import annotations

import threading
from dataclasses import replace

from c1.commands.serve_flags import ServeFlags
from c1.config import Settings
from c1.errors import C1Error


def run_serve(settings: Settings, flags: ServeFlags, *, json_out: bool) -> int:
    from c1.terminal.console import emit_json, err, escape

    if flags.api_only:
        from c1.service.http_api import serve_api

        if flags.port is not None:
            raise C1Error(f"--port is vLLM's port; with --api-only there is no vLLM: give the search API's port "
                          f"with --api-port {flags.port}")
        return serve_api(settings, **flags.api_kwargs())
    from c1.model.launcher import run
    from c1.model.plan import plan
    from c1.model.prepare import prepare

    opts = flags.serve_options(settings)
    the_plan = plan(opts)
    if flags.dry_run or json_out:
        if json_out:
            emit_json(the_plan.to_dict())
        else:
            print("\n".join(the_plan.describe()))
        return 0 if the_plan.ready else 2
    if the_plan.problems:  # before any download or conversion: nothing would run at the end of it
        raise C1Error(f"cannot serve: {the_plan.problems[0]['message']} (`c1 serve --dry-run` shows the plan)")
    the_plan = prepare(the_plan, progress=_conversion_progress())
    api_server = None
    if not flags.no_api:
        from c1.service.http_api import make_server

        model_settings = replace(settings, base_urls=(the_plan.url,), model=the_plan.api_model, policy="llm")
        # bound now: a port clash fails before vLLM starts; a request's budget may not outgrow vLLM's window
        api_server = make_server(model_settings, **flags.api_kwargs(), max_budget=the_plan.max_model_len - opts.reply_headroom)

    serving = threading.Event()

    def on_status(status) -> None:
        err().print(f"[dim]c1 serve:[/] {escape(status.message)}", soft_wrap=True)
        if status.state == "ready" and api_server is not None and not serving.is_set():
            serving.set()
            threading.Thread(target=api_server.serve_forever, daemon=True, name="c1-api").start()
            err().print(f"[dim]c1 serve:[/] search API on {escape(f'http://{flags.api_host}:{flags.api_port}/v1/search')}", soft_wrap=True)

    try:
        return run(the_plan, timeout_s=flags.ready_timeout, on_status=on_status)
    finally:
        if api_server is not None:
            if serving.is_set():
                api_server.close()
            else:  # never served: shutdown() would wait for a loop that never ran
                api_server.server_close()
                api_server.service.close()


def _conversion_progress():
    """A progress callback for the one-off MXFP4 conversion (bytes done / total)."""
    from c1.terminal.console import err, escape

    state = {"pct": -10.0}

    def progress(done: int, total: int, name: str) -> None:
        pct = 100 * done / total if total else 100.0
        if pct - state["pct"] >= 5 or done >= total:
            state["pct"] = pct
            err().print(f"[dim]c1 serve:[/] converting experts to MXFP4: {pct:.0f}% ({escape(name)})", soft_wrap=True)

    return progress
