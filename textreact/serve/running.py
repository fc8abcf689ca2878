"""An app -> served by uvicorn in a background thread on 127.0.0.1, for tests, benchmarks and
notebooks (`textreact serve` itself runs uvicorn in the foreground: `textreact.serve.cli`)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from textreact.errors import MissingExtraError
from textreact.serve.config import INSTALL_HINT


@contextlib.contextmanager
def serving(
    app: Any, *, host: str = "127.0.0.1", port: int = 0, options: Mapping[str, Any] | None = None
) -> Iterator[str]:
    """Run `app` on uvicorn in a background thread and yield its base URL (…/v1); it stops
    when the block ends. Port 0 takes a free port; `options` go to uvicorn (for the proxy:
    `connections.uvicorn_options(config)`). For tests, benchmarks and notebooks."""
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingExtraError(f"textreact serve needs uvicorn ({exc}): {INSTALL_HINT}") from exc
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on", **(options or {})
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"uvicorn did not start on {host}:{port}")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
