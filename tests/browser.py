"""A Chromium tab for the browser tests (Debian's chromium driven by Playwright) that records
every console error, page error and unexpected dialog: a test asserts the record is empty."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import playwright.sync_api as playwright_api
from waits import kill, sigint_default

CHROMIUM = Path("/usr/bin/chromium")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium, launched through Playwright, for a module's tests (four launches
    fewer for the six browser tests saved about 5 CPU-s); each test opens its own context
    (chromium_tab)."""
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def chromium_tab(browser: Any, answers: list[str] | None = None, **context: Any
                 ) -> Iterator[tuple[Any, list[str]]]:
    """(tab, problems) in a fresh context of ``browser`` (its own cookies, storage and
    downloads): a prompt is accepted with the next of ``answers`` (a test appends to it before
    it clicks); any other dialog — an executed <script>alert(1)</script> — is a problem.
    ``context``: options of the browser context (accept_downloads=True, ...)."""
    problems: list[str] = []
    browser_context = browser.new_context(**context)
    try:
        tab = browser_context.new_page()
        tab.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}")
               if msg.type == "error" else None)
        tab.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))

        def on_dialog(dialog: Any) -> None:
            if dialog.type == "prompt" and answers:
                dialog.accept(answers.pop(0))
            else:
                problems.append(f"dialog: {dialog.type} {dialog.message}")
                dialog.dismiss()

        tab.on("dialog", on_dialog)
        yield tab, problems
    finally:
        browser_context.close()


def wait_for(url: str, timeout: float = 120.0,
             server: subprocess.Popen[str] | None = None) -> None:
    """Until ``url`` answers. A bound for a hang, not a speed: the suite's other lines load
    both cores (a first page once took over 30 s); a server that exited fails at once, with
    its output."""
    deadline = time.monotonic() + timeout
    while True:  # ends: done, or past the deadline below
        if server is not None and server.poll() is not None:
            out, err = server.communicate()
            raise AssertionError(f"the server exited ({server.returncode}): {out}{err}")
        try:
            with urllib.request.urlopen(url, timeout=10):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@contextmanager
def serving(db: str, cwd: Path, env: dict[str, str]) -> Iterator[str]:
    """`virtbench serve` of ``db`` on a free loopback port: its base URL once /runs answers;
    stopped by SIGINT (then killed) on the way out."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "virtbench.cli", "serve", "--store", db,
                               "--port", str(port)], cwd=cwd, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=sigint_default)
    try:
        wait_for(f"http://127.0.0.1:{port}/runs", server=server)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            kill(server)
