"""What stops ``c1 serve``: one error class per cause, each one line to show the user as it is."""

from __future__ import annotations

from c1.errors import C1Error

INSTALL_HINT = "pip install 'c1[gpu]'"

class ServeError(C1Error, RuntimeError):
    """A failure to show the user as it is: ``str(exc)`` is one line saying what to do."""


class VllmNotInstalled(ServeError):
    pass


class NoGpu(ServeError):
    pass


class GpuUnsupported(ServeError):
    """Compute capability too low, too little memory, or fewer GPUs than tensor parallelism."""


class PortConflict(ServeError):
    pass


class ServerNotReady(ServeError):
    """vLLM kept running but did not become ready in time."""


class ServerDied(ServeError):
    """vLLM exited. ``str(exc)`` ends with the tail of its log; ``log_tail`` holds it alone."""

    def __init__(self, summary: str, log_tail: str = "", log_path: str | None = None, returncode: int | None = None):
        where = f" (full log: {log_path})" if log_path else ""
        text = f"{summary}{where}"
        if log_tail:
            text += "\n--- last lines of the vLLM log ---\n" + log_tail
        super().__init__(text)
        self.summary, self.log_tail, self.log_path, self.returncode = summary, log_tail, log_path, returncode


PROBLEM_ERRORS: dict[str, type[ServeError]] = {
    "vllm": VllmNotInstalled,
    "no_gpu": NoGpu,
    "compute_capability": GpuUnsupported,
    "memory": GpuUnsupported,
    "tensor_parallel": GpuUnsupported,
}
