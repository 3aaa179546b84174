"""The WordPress multisite origin on real MariaDB, php-fpm, nginx and Varnish (one bounded run,
about 20 s), and its refusal when 127.0.0.1:80 is taken."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import urllib.request
from pathlib import Path

import pytest
from webhelpers import make_lab, needs_web

from virtbench.labs.lab_contract import Manifest
from virtbench.labs.web import WebLab
from virtbench.labs.web.wordpress import check_tools
from virtbench.model import VirtbenchError
from virtbench.services import WebStack
from virtbench.targets.daemon import is_ours

needs_wordpress = pytest.mark.skipif(
    bool(check_tools(shutil.which)) or os.geteuid() != 0,
    reason="needs root and the Debian packages wordpress, wordpress-theme-twentytwentyone, "
    "php-fpm, php-mysql, mariadb-server")
pytestmark = [pytest.mark.lab, needs_web, needs_wordpress, pytest.mark.timeout(600)]


def _port_80_in_use() -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", 80))
        except OSError:
            return True
    return False


def _get(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.status, resp.headers["X-Varnish"], resp.read().decode()


def _title(html: str) -> str:
    match = re.search(r"<title>(.*?)</title>", html, re.S)
    assert match, html[:500]
    return match.group(1)


def test_wordpress_multisite_through_varnish(open_dir: Path, lab_root: Path) -> None:
    if _port_80_in_use():
        pytest.skip("127.0.0.1:80 is in use (the WordPress origin needs it)")
    lab = make_lab(open_dir, origin="wordpress-multisite", sites=2, pages_per_site=2,
                   wordpress_media_bytes=50_000, wordpress_php_workers=2)
    try:
        lab.up()
        state = lab.enter("wp", {"cache_storage": "malloc", "cache_size": "64M"})
        urls = state.services.get(WebStack).urls
        assert [u.split(":", 2)[2].split("/", 1)[1] for u in urls] == [
            "site1/page-1/", "site1/page-2/", "site2/page-1/", "site2/page-2/"]
        titles = {}
        for url in (urls[0], urls[2]):
            status, first, html = _get(url)
            assert status == 200 and len(first.split()) == 1  # a miss: rendered by WordPress
            assert 'name="generator" content="WordPress' in html
            assert "twentytwentyone" in html and "data:image/png;base64," in html
            titles[url] = _title(html)
            status, second, again = _get(url)
            assert status == 200 and len(second.split()) == 2 and again == html  # a hit
        assert titles[urls[0]].startswith("Page 1 of site 1")
        assert titles[urls[0]].endswith("virtbench site 1")
        assert titles[urls[2]].endswith("virtbench site 2")
        # A crashed run leaves only the manifest: clean() stops every server of ours by PID.
        manifest_path = lab_root / f"{lab.run_id}.json"
        items = json.loads(manifest_path.read_text())["objects"]["pid"]
        assert {i["what"] for i in items} == {"mariadbd", "php-fpm", "nginx", "varnishd"}
        pids = [i["pid"] for i in items]
        assert all(is_ours(p, str(lab.private)) for p in pids)
        removed = WebLab.clean(Manifest(manifest_path, "web"))
        assert sum("stopped" in r for r in removed) == 4
        assert not any(is_ours(p, str(lab.private)) for p in pids)
        assert not lab.private.exists() and not _port_80_in_use()
        for p in pids:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(p, os.WNOHANG)
    finally:
        lab.down()
    assert list(lab_root.iterdir()) == []


def test_port_80_taken_is_refused_clearly(open_dir: Path, lab_root: Path) -> None:
    if _port_80_in_use():
        pytest.skip("127.0.0.1:80 is already in use")
    blocker = socket.socket()
    blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    blocker.bind(("127.0.0.1", 80))
    blocker.listen(1)
    lab = make_lab(open_dir, origin="wordpress-multisite", sites=1, pages_per_site=1)
    try:
        with pytest.raises(VirtbenchError, match=r"127\.0\.0\.1:80.*already listens"):
            lab.up()
    finally:
        blocker.close()
        lab.down()
    assert list(lab_root.iterdir()) == []
