"""WordPress origin: configuration rendering and generated media (pure functions)."""

from __future__ import annotations

import base64
import re
import zlib
from pathlib import Path

from virtbench.labs.web import wpconfig
from virtbench.labs.web.wordpress import inline_png, page_paths


def test_page_paths_are_site_major_pretty_permalinks() -> None:
    assert page_paths(2, 2) == ["/site1/page-1/", "/site1/page-2/", "/site2/page-1/",
                                "/site2/page-2/"]


def test_wp_config_reads_nothing_outside_the_tree_and_stays_offline() -> None:
    text = wpconfig.wp_config(db_socket=Path("/x/mysqld.sock"), db_password="pw", seed=3)
    assert "/etc/wordpress" not in text
    assert "define('DB_HOST', 'localhost:/x/mysqld.sock');" in text
    for constant in ("WP_HTTP_BLOCK_EXTERNAL", "DISABLE_WP_CRON", "AUTOMATIC_UPDATER_DISABLED"):
        assert f"define('{constant}', true);" in text
    assert text == wpconfig.wp_config(db_socket=Path("/x/mysqld.sock"), db_password="pw", seed=3)
    assert "DOMAIN_CURRENT_SITE', '127.0.0.1'" in wpconfig.multisite_php()


def test_private_daemons_ignore_system_configuration() -> None:
    argv = wpconfig.mariadbd_argv(datadir=Path("/p/d"), socket=Path("/p/s"), port=3399,
                                  pid_file=Path("/p/pid"), log=Path("/p/log"))
    assert argv[:2] == ["mariadbd", "--no-defaults"] and "--bind-address=127.0.0.1" in argv
    conf = wpconfig.php_fpm_conf(prefix=Path("/p/fpm"), socket=Path("/p/fpm/s"), children=3)
    assert "listen = /p/fpm/s" in conf and "pm.max_children = 3" in conf
    assert "include" not in conf  # no pool.d from /etc


def test_inline_png_is_a_valid_distinct_image_of_about_the_asked_size() -> None:
    html = inline_png(1, 1, 1, 100_000)
    assert 95_000 < len(html) < 105_000
    data = base64.b64decode(re.search(r"base64,([^\"]+)\"", html).group(1))  # type: ignore[union-attr]
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    idat = data[data.index(b"IDAT") + 4:data.index(b"IEND") - 8]
    width, height = int(re.search(r'width="(\d+)"', html).group(1)), int(  # type: ignore[union-attr]
        re.search(r'height="(\d+)"', html).group(1))  # type: ignore[union-attr]
    assert len(zlib.decompress(idat)) == height * (1 + width * 3)
    assert inline_png(1, 1, 1, 100_000) == html and inline_png(1, 1, 2, 100_000) != html
