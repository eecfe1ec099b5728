"""CLI failures: a message for a human and an exit status, never a traceback."""

from __future__ import annotations


class CliError(Exception):
    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status
