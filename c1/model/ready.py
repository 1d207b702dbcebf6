"""Readiness: poll vLLM's ``/health`` then ``/v1/models`` until the model is listed, watching the child."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from c1.model.errors import ServerNotReady
from c1.model.plan import ServePlan
from c1.model.process import ServerProcess


@dataclass(frozen=True)
class Status:
    """What :func:`c1.model.launcher.run` is doing, for a live view. ``state``: ``starting``, ``waiting``,
    ``ready``, ``stopping``, ``stopped``."""

    state: str
    message: str
    elapsed_s: float


def _http_get(url: str, timeout_s: float = 2.0) -> tuple[int, bytes] | None:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""
    except (OSError, ValueError):
        return None


def _lists_model(body: bytes, name: str) -> bool:
    try:
        return any(m.get("id") == name for m in json.loads(body).get("data", []))
    except (ValueError, AttributeError):
        return False


def wait_until_ready(
    server: ServerProcess,
    plan_: ServePlan,
    *,
    timeout_s: float,
    on_status: Callable[[Status], None],
    poll_s: float = 0.5,
    started: float | None = None,
) -> None:
    """Poll ``/health`` then ``/v1/models`` until the model is listed, watching the child."""
    started = time.monotonic() if started is None else started
    base = plan_.url.removesuffix("/v1")
    healthy, next_note = False, started + 15.0
    while True:
        if server.proc.poll() is not None:
            raise server.died(f"vLLM exited with code {server.proc.returncode} before it was ready")
        if not healthy:
            answer = _http_get(f"{base}/health")
            healthy = answer is not None and answer[0] == 200
            if healthy:
                on_status(
                    Status("waiting", "vLLM is up; waiting for the model to be listed", time.monotonic() - started)
                )
        if healthy:
            answer = _http_get(f"{base}/v1/models")
            if answer and answer[0] == 200 and _lists_model(answer[1], plan_.served_model_name):
                return
        now = time.monotonic()
        if now - started > timeout_s:
            raise ServerNotReady(f"vLLM was not ready after {timeout_s:.0f} s (log: {server.log_path})")
        if now >= next_note:
            on_status(Status("waiting", f"loading {plan_.model} ({now - started:.0f} s)", now - started))
            next_note = now + 15.0
        time.sleep(poll_s)
