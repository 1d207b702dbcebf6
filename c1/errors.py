"""Errors the user must act on. The CLI prints ``c1: error: <message>`` and exits with ``code``."""


class C1Error(Exception):
    code = 2

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code
