"""Run the app with uvicorn in this process (one worker: the cache lives in it)."""

from __future__ import annotations

from collections.abc import Callable

import uvicorn

from virtbench.serve.app import create_app
from virtbench.store import Store

__all__ = ["run_server"]


def run_server(location: str, host: str, port: int, announce: Callable[[str], None]) -> None:
    store = Store(location, read_only=True)
    shown = f"[{host}]" if ":" in host else host
    announce(f"http://{shown}:{port}/")
    try:
        uvicorn.run(create_app(store), host=host, port=port, log_level="warning",
                    access_log=False)
    finally:
        store.close()
