"""`textreact serve`: OpenAI tool calls for any model, as a proxy. An OpenAI-compatible server
in front of an upstream that has no working tool calls: each request with `tools` is one turn
of the text protocol (one request = one model turn; the client runs its own loop), answered
in OpenAI's shape. Needs the `serve` extra (Starlette and uvicorn)."""

from __future__ import annotations

from textreact.serve.app import create_app, serving
from textreact.serve.config import ServeConfig

__all__ = ["ServeConfig", "create_app", "serving"]
