"""Pure parts of the web lab: storage knob, sizes, VCL, nginx config, generated pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.labs.web.nginx import nginx_conf
from virtbench.labs.web.sitegen import generate_site, page_paths
from virtbench.labs.web.varnish import parse_size, parse_storage, varnishd_argv, vcl


def test_storage_knob_values() -> None:
    assert parse_storage("malloc", "1G").kind == "malloc"
    assert parse_storage("file-tmpfs", "64M").kind == "file-tmpfs"
    user = parse_storage("file:/mnt/san", "2G")
    assert (user.kind, user.path) == ("file-path", Path("/mnt/san"))
    with pytest.raises(ValueError, match="absolute"):
        parse_storage("file:relative/dir", "1G")
    with pytest.raises(ValueError, match="malloc, file-disk"):
        parse_storage("ssd", "1G")
    with pytest.raises(ValueError, match="size"):
        parse_storage("malloc", "lots")


def test_sizes() -> None:
    assert parse_size("65536") == 65536
    assert parse_size("256M") == 256 << 20
    assert parse_size("1g") == 1 << 30


def test_vcl_and_argv() -> None:
    text = vcl(backend_port=8080, connect_timeout_s=1, first_byte_timeout_s=2.5,
               between_bytes_timeout_s=3, host_header="127.0.0.1")
    assert '.port = "8080"' in text and ".first_byte_timeout = 2.5s" in text
    assert 'set req.http.Host = "127.0.0.1"' in text
    argv = varnishd_argv(port=1, workdir=Path("/w"), vcl_path=Path("/w/x.vcl"),
                         storage_arg="malloc,1G", extra_params={"timeout_linger": "0"})
    assert argv[:2] == ["varnishd", "-F"] and "timeout_linger=0" in argv


def test_nginx_conf_keeps_everything_in_the_prefix() -> None:
    conf = nginx_conf(prefix=Path("/p"), port=81, root=Path("/r"), max_age_s=0,
                      limit_rate_bps=1000)
    assert "listen 127.0.0.1:81;" in conf and "no-store" in conf and "limit_rate 1000;" in conf
    assert "pid /p/nginx.pid;" in conf and "proxy_temp_path /p/proxy_temp;" in conf


def test_generated_site_is_reproducible_and_exact(tmp_path: Path) -> None:
    a = generate_site(tmp_path / "a", seed=5, sites=2, pages_per_site=3, page_bytes=5000)
    b = generate_site(tmp_path / "b", seed=5, sites=2, pages_per_site=3, page_bytes=5000)
    c = generate_site(tmp_path / "c", seed=6, sites=2, pages_per_site=3, page_bytes=5000)
    assert a == b == c == page_paths(2, 3)
    pages_a = [(tmp_path / "a" / p.lstrip("/")).read_bytes() for p in a]
    pages_b = [(tmp_path / "b" / p.lstrip("/")).read_bytes() for p in b]
    pages_c = [(tmp_path / "c" / p.lstrip("/")).read_bytes() for p in c]
    assert pages_a == pages_b and pages_a != pages_c
    assert {len(p) for p in pages_a} == {5000}
    assert len(set(pages_a)) == len(pages_a)  # every page its own object


def test_cache_memory_is_checked_before_anything_runs(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from virtbench.labs.web import WebLab
    from virtbench.targets.fake import FakeTarget
    from virtbench.targets.local import LocalTarget

    def lab(target: object, **params: object) -> WebLab:
        return WebLab(WebLab.Params(**params), tmp_path, target)  # type: ignore[arg-type]

    remote = lab(FakeTarget(), cache_memory_mib=64)
    assert any("cache_memory_mib is a cgroup on this machine" in p for p in remote.check())
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    local = lab(LocalTarget(), cache_memory_mib=64)
    assert any("needs root" in p for p in local.check()) or any(
        "memory cgroup controller" in p for p in local.check())
    # malloc storage that cannot fit beside varnishd: refused per variant, file storage not
    assert local.check_variant("m", {"cache_storage": "malloc", "cache_size": "64M"}) == [
        "lab web: variant m: cache_storage malloc of 64M does not fit in "
        "params.cache_memory_mib (64 MiB): malloc storage is varnishd's own memory; give a "
        "smaller cache_size, or file storage"]
    assert local.check_variant("f", {"cache_storage": "file-disk", "cache_size": "1G"}) == []
    assert local.check_variant("s", {"cache_storage": "ssd"})[0].startswith(
        "variant s: cache_storage 'ssd'")
    assert lab(LocalTarget()).check_variant("m", {"cache_storage": "malloc"}) == []  # no limit
