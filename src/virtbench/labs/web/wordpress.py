"""Build and start the WordPress multisite origin from a private directory.

MariaDB (its own datadir, socket and 127.0.0.1 port), a copy of Debian's WordPress tree with our
own wp-config.php, a php-fpm pool of our own and nginx on 127.0.0.1:80 (multisite refuses a port
in its domain). Installed and populated offline with php-cli: no browser, no WP-CLI (not in
Debian 12), no network.
"""

from __future__ import annotations

import base64
import errno
import json
import secrets
import socket
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from virtbench.contract import Tool, missing_tools
from virtbench.labs.web import nginx as nginx_cfg
from virtbench.labs.web import wpconfig
from virtbench.model import VirtbenchError
from virtbench.targets.daemon import Daemon, free_port
from virtbench.targets.target_contract import CommandFailed, Target

__all__ = ["HTTP_PORT", "WORDPRESS_TREE", "WordPressSpec", "check_port_80_free", "check_tools",
           "inline_png", "page_paths", "site_title", "start_nginx", "start_wordpress"]

WORDPRESS_TREE = Path("/usr/share/wordpress")
THEME = WORDPRESS_TREE / "wp-content" / "themes" / "twentytwentyone"
HTTP_PORT = 80

Spawn = Callable[[str, list[str], Path], Daemon]


@dataclass(frozen=True)
class WordPressSpec:
    sites: int
    pages_per_site: int
    media_bytes: int
    seed: int
    max_age_s: int
    limit_rate_bps: int
    php_children: int = 4


def page_paths(sites: int, pages_per_site: int) -> list[str]:
    """URL paths of every page (pretty permalinks), site-major: /site1/page-1/ ..."""
    return [f"/site{s}/page-{p}/" for s in range(1, sites + 1)
            for p in range(1, pages_per_site + 1)]


def site_title(site: int) -> str:
    return f"virtbench site {site}"


def check_port_80_free() -> None:
    """Multisite needs 127.0.0.1:80 (no port in the domain): refuse clearly when it is taken."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", HTTP_PORT))
        except OSError as exc:
            why = "something already listens there" if exc.errno == errno.EADDRINUSE \
                else exc.strerror
            raise VirtbenchError(
                "lab web: origin 'wordpress-multisite' needs 127.0.0.1:80 (WordPress multisite "
                f"refuses a port in its domain), but it cannot be bound: {why}; stop that server "
                "or use origin static-multisite") from None


def check_tools(which: Callable[[str], str | None]) -> list[str]:
    problems = missing_tools("lab web", which, (
        Tool("mariadbd", "mariadb-server"), Tool("mariadb-install-db", "mariadb-server"),
        Tool("mariadb", "mariadb-client"), Tool("php-fpm8.2", "php-fpm"), Tool("php", "php-cli")))
    if not (WORDPRESS_TREE / "wp-settings.php").exists():
        problems.append("lab web: WordPress not found in /usr/share/wordpress; install the "
                        "Debian package 'wordpress'")
    if not THEME.is_dir():
        problems.append("lab web: theme twentytwentyone not found; install the Debian package "
                        "'wordpress-theme-twentytwentyone' (without a theme pages are blank)")
    return problems


def _text(rng: np.random.Generator, words: int) -> str:
    vocabulary = ["cache", "storage", "varnish", "origin", "request", "page", "site", "memory",
                  "disk", "network", "object", "hit", "miss", "latency", "response", "server",
                  "client", "byte", "time", "run", "warm", "cold"]
    picks = rng.integers(0, len(vocabulary), size=words)
    return " ".join(vocabulary[int(i)] for i in picks)


def _pages(spec: WordPressSpec, site: int) -> list[dict[str, str]]:
    rng = np.random.default_rng(np.random.SeedSequence(spec.seed, spawn_key=(site,)))
    pages = []
    for p in range(1, spec.pages_per_site + 1):
        paragraphs = "\n\n".join(_text(rng, 60).capitalize() + "." for _ in range(4))
        pages.append({"slug": f"page-{p}", "title": f"Page {p} of site {site}",
                      "content": paragraphs})
    return pages


def inline_png(seed: int, site: int, page: int, approx_bytes: int) -> str:
    """An ``<img>`` with a generated noise PNG as a data: URI of about ``approx_bytes`` bytes
    (incompressible, distinct per page, the same for the same seed)."""
    width = 256
    row = 1 + width * 3
    raw_target = max(row, approx_bytes * 3 // 4)
    height = max(1, raw_target // row)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(site, page, 0x3D1A)))
    pixels = rng.integers(0, 256, size=(height, width * 3), dtype=np.uint8)
    scanlines = np.zeros((height, row), dtype=np.uint8)  # filter byte 0 on every scanline
    scanlines[:, 1:] = pixels

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    png = (b"\x89PNG\r\n\x1a\n"
           + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(scanlines.tobytes(), 0)) + chunk(b"IEND", b""))
    data = base64.b64encode(png).decode()
    return (f'<figure class="vb-media"><img width="{width}" height="{height}" '
            f'alt="generated media {site}-{page}" src="data:image/png;base64,{data}"></figure>\n')


def _run(target: Target, argv: list[str], what: str, *, cwd: Path | None = None,
         timeout: float = 120) -> str:
    try:
        return target.run(argv, cwd=str(cwd) if cwd else None, timeout=timeout).stdout
    except CommandFailed as exc:
        detail = (exc.result.stderr or exc.result.stdout).strip()[-600:]
        raise VirtbenchError(f"lab web: {what} failed: {detail}") from None


def start_wordpress(private: Path, spec: WordPressSpec, target: Target,
                    spawn: Spawn,
                    timings: dict[str, float]) -> list[str]:
    """Install, populate and start the stack under ``private``; return the page paths.

    ``spawn(what, argv, log)`` starts a server and records its PID in the lab's manifest.
    nginx is started by the caller (it is the origin server the tests stop and start).
    """
    wp = private / "wp"
    db = private / "mysql"
    db_socket = db / "mysqld.sock"
    db_password = secrets.token_hex(12)
    with _timed(timings, "wordpress_copy"):
        _copy_wordpress(target, wp, spec, db, db_socket, db_password)
    with _timed(timings, "mariadb"):
        _start_mariadb(target, spawn, db, db_socket, db_password)
    with _timed(timings, "wordpress_install"):
        created = _install_sites(target, wp, private / "setup", spec)
    if spec.media_bytes > 0:
        with _timed(timings, "media"):
            _write_media(wp / "wp-content" / "vb-media", created, spec)
    with _timed(timings, "php_fpm"):
        _start_php_fpm(spawn, private / "php-fpm", spec)
    return page_paths(spec.sites, spec.pages_per_site)


@contextmanager
def _timed(timings: dict[str, float], name: str) -> Iterator[None]:
    """``timings[name]``: the seconds the block took (not set when it raises)."""
    t = time.monotonic()
    yield
    timings[name] = time.monotonic() - t


def _copy_wordpress(target: Target, wp: Path, spec: WordPressSpec, db: Path, db_socket: Path,
                    db_password: str) -> None:
    """Debian's WordPress tree copied to ``wp``, configured for the database at
    ``db_socket``, with the lab's media plugin."""
    _run(target, ["cp", "-rL", str(WORDPRESS_TREE), str(wp)], "copying /usr/share/wordpress")
    db.mkdir()
    (wp / "wp-config.php").write_text(wpconfig.wp_config(
        db_socket=db_socket, db_password=db_password, seed=spec.seed))
    (wp / "wp-content" / "mu-plugins").mkdir(exist_ok=True)
    (wp / "wp-content" / "mu-plugins" / "vb-media.php").write_text(wpconfig.MEDIA_PLUGIN)


def _start_mariadb(target: Target, spawn: Spawn, db: Path, db_socket: Path,
                   db_password: str) -> None:
    """A MariaDB server of its own under ``db``, with WordPress's database and user."""
    _run(target, wpconfig.mariadb_install_argv(db / "data"), "mariadb-install-db")
    log = db / "mariadbd.log"
    proc = spawn("mariadbd", wpconfig.mariadbd_argv(
        datadir=db / "data", socket=db_socket, port=free_port(), pid_file=db / "mariadbd.pid",
        log=log), log)
    proc.wait_for_file(db_socket)
    sql = (f"CREATE DATABASE {wpconfig.DB_NAME} CHARACTER SET utf8mb4; "
           f"CREATE USER '{wpconfig.DB_USER}'@'localhost' IDENTIFIED BY '{db_password}'; "
           f"GRANT ALL ON {wpconfig.DB_NAME}.* TO '{wpconfig.DB_USER}'@'localhost';")
    _run(target, ["mariadb", "--no-defaults", f"--socket={db_socket}", "-u", "root", "-e", sql],
         "creating the WordPress database")


def _install_sites(target: Target, wp: Path, setup: Path,
                   spec: WordPressSpec) -> list[dict[str, Any]]:
    """Install WordPress as a multisite network and create its sites and pages; what the
    populate script created (each site's blog_id and pages)."""
    setup.mkdir()
    (wp / "vb-install.php").write_text(wpconfig.WP_INSTALL_PHP)
    (wp / "vb-populate.php").write_text(wpconfig.WP_POPULATE_PHP)
    (setup / "install.json").write_text(json.dumps({
        "title": "virtbench network", "host": wpconfig.SITE_HOST,
        "password": secrets.token_hex(12)}))
    _run(target, ["php", "vb-install.php", str(setup / "install.json")], "WordPress install",
         cwd=wp)
    (wp / "wp-multisite.php").write_text(wpconfig.multisite_php())
    sites = [{"path": f"/site{s}/", "title": site_title(s), "pages": _pages(spec, s)}
             for s in range(1, spec.sites + 1)]
    (setup / "populate.json").write_text(json.dumps({"host": wpconfig.SITE_HOST,
                                                     "sites": sites}))
    out = _run(target, ["php", "vb-populate.php", str(setup / "populate.json")],
               "WordPress sites and pages", cwd=wp, timeout=600)
    try:
        created: list[dict[str, Any]] = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise VirtbenchError("lab web: WordPress sites and pages: unexpected output: "
                             + out.strip()[-600:]) from None
    for name in ("vb-install.php", "vb-populate.php"):  # not reachable over HTTP afterwards
        (wp / name).unlink()
    return created


def _write_media(media: Path, created: list[dict[str, Any]], spec: WordPressSpec) -> None:
    """Each page's inline image (of the spec's media size in bytes), by blog and page id."""
    media.mkdir()
    for s, site in enumerate(created, start=1):
        for p, page in enumerate(site["pages"], start=1):
            (media / f"{site['blog_id']}-{page['id']}.html").write_text(
                inline_png(spec.seed, s, p, spec.media_bytes))


def _start_php_fpm(spawn: Spawn, fpm: Path, spec: WordPressSpec) -> None:
    """The php-fpm pool (the spec's number of children) on a socket under ``fpm``."""
    fpm.mkdir()
    fpm_socket = fpm / "php-fpm.sock"
    conf = fpm / "php-fpm.conf"
    conf.write_text(wpconfig.php_fpm_conf(prefix=fpm, socket=fpm_socket,
                                          children=spec.php_children))
    log = fpm / "php-fpm.stderr"
    proc = spawn("php-fpm", wpconfig.php_fpm_argv(conf), log)
    proc.wait_for_file(fpm_socket)


def start_nginx(private: Path, spec: WordPressSpec,
                spawn: Spawn) -> Daemon:
    """nginx on 127.0.0.1:80 in front of the php-fpm pool (the WordPress origin server)."""
    prefix = private / "nginx"
    prefix.mkdir(exist_ok=True)
    conf = prefix / "nginx.conf"
    conf.write_text(nginx_cfg.nginx_conf(
        prefix=prefix, port=HTTP_PORT, root=private / "wp", max_age_s=spec.max_age_s,
        limit_rate_bps=spec.limit_rate_bps, php_fpm_socket=private / "php-fpm" / "php-fpm.sock"))
    log = prefix / "nginx.stderr"
    proc = spawn("nginx", nginx_cfg.nginx_argv(conf, prefix), log)
    proc.wait_for_port(HTTP_PORT)
    return proc
