"""``c1 serve``: plan, prepare and run a vLLM server for Context-1 (gpt-oss-20b + MXFP4 experts).

Three steps, each usable alone:

- :func:`c1.model.plan.plan` decides everything without running anything: the ``vllm serve`` command, the
  GPU verdict, the MXFP4 conversion needed, warnings and blocking problems. It works without a
  GPU and without vLLM installed (``c1 serve --dry-run``).
- :func:`c1.model.prepare.prepare` performs the slow, cached preliminaries: download the checkpoint if it is a
  hub id, convert its MoE experts to MXFP4 (:mod:`c1.model.quantize`).
- :func:`run` (this module) starts vLLM in its own process group, waits until ``/health`` answers and
  ``/v1/models`` lists the model, then serves until vLLM exits or the user stops it (Ctrl-C,
  SIGTERM, SIGHUP); stopping sends SIGINT to the whole group (vLLM's clean shutdown frees the
  GPU), then SIGTERM, then SIGKILL, and leaves no orphan (vLLM's engine-core workers included).

Each step is a module of one job: :mod:`.settings`, :mod:`.plan`, :mod:`.prepare`, :mod:`.process`
(supervision and signals), :mod:`.ready` (readiness) and :mod:`.errors`; this one runs them. Only the
standard library is imported at module level: ``import c1.model.launcher`` is cheap.
"""

from __future__ import annotations

import shlex
import signal
import socket
import time
from collections.abc import Callable

from c1.model.errors import INSTALL_HINT, PROBLEM_ERRORS, PortConflict, ServeError, VllmNotInstalled
from c1.model.plan import ServePlan
from c1.model.process import ServerProcess, signals_raise, Terminated
from c1.model.ready import Status, wait_until_ready


def ensure_runnable(plan_: ServePlan) -> None:
    """Raise the error for the first thing that stops this plan from running."""
    if plan_.conversion and plan_.conversion["state"] != "done":
        raise ServeError("the checkpoint must be converted first: call prepare(plan) (c1 serve --quantize mxfp4)")
    for problem in plan_.problems:
        raise PROBLEM_ERRORS.get(problem["kind"], ServeError)(problem["message"])


def ensure_port_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise PortConflict(
                f"port {port} on {host} is already in use ({exc.strerror}); choose another with --port"
            ) from exc


def run(
    plan_: ServePlan,
    *,
    timeout_s: float = 1800.0,
    on_status: Callable[[Status], None] | None = None,
    on_log: Callable[[str], None] | None = None,
    grace_s: float = 15.0,
    poll_s: float = 0.5,
) -> int:
    """Start vLLM, wait until it serves the model, then serve until it exits or we are told
    to stop. Returns the exit status for the CLI: vLLM's own on a clean exit, 130 after
    Ctrl-C, 128+signal after SIGTERM/SIGHUP. Raises :class:`ServeError` subclasses for
    everything else, :class:`ServerDied` (with the log tail) when vLLM exits on its own.

    ``on_status`` is called in this thread; ``on_log`` (each line vLLM prints, also written
    to ``plan.log_path``) in the thread that reads vLLM's output."""
    ensure_runnable(plan_)
    ensure_port_free(plan_.host, plan_.port)
    notify = on_status or (lambda status: None)
    started = time.monotonic()

    def status(state: str, message: str) -> None:
        notify(Status(state, message, time.monotonic() - started))

    with signals_raise():
        try:
            server = ServerProcess(plan_.command, plan_.log_path, on_log, plan_.env)
        except FileNotFoundError as exc:
            raise VllmNotInstalled(f"cannot run {plan_.command[0]}: {INSTALL_HINT}") from exc
        status("starting", f"starting vLLM (pid {server.proc.pid}): {shlex.join(plan_.command)}")
        try:
            wait_until_ready(server, plan_, timeout_s=timeout_s, on_status=notify, poll_s=poll_s, started=started)
            status("ready", f"ready: {plan_.url} serves {plan_.served_model_name}")
            code = server.proc.wait()
            if code != 0:
                raise server.died(f"vLLM exited with code {code}")
            return code
        except KeyboardInterrupt:
            status("stopping", "interrupted: stopping vLLM")
            return 130
        except Terminated as exc:
            status("stopping", f"received {signal.Signals(exc.signum).name}: stopping vLLM")
            return 128 + exc.signum
        finally:
            server.stop(grace_s)
            status("stopped", f"vLLM stopped (log: {server.log_path})")
