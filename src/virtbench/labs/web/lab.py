"""The web lab: an origin (static nginx multisite, WordPress multisite, or an external server)
with Varnish in front, everything from a private directory on 127.0.0.1.

Entering a variant (re)starts Varnish cold with that variant's cache storage; the repetitions
that follow run against the same Varnish without a restart, so repetition k is the study's
run k+1 (cold, warming, warm).
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from virtbench.contract import Knob, Params, Port, Tool, parsed_by
from virtbench.labs.cgroups import Cgroup, CgroupLayout, CgroupLimits, remove_cgroup_dir
from virtbench.labs.daemons import clean_recorded, start_recorded
from virtbench.labs.lab_contract import Lab, LabState, Manifest, lab_root
from virtbench.labs.web import nginx as nginx_cfg
from virtbench.labs.web import varnish as varnish_cfg
from virtbench.labs.web import wordpress as wp_origin
from virtbench.labs.web import wpconfig
from virtbench.labs.web.fsinfo import fs_type
from virtbench.labs.web.sitegen import generate_site
from virtbench.model import VirtbenchError
from virtbench.services import WebStack
from virtbench.targets.cgroup import CgroupTarget
from virtbench.targets.daemon import Daemon, free_port
from virtbench.targets.local import LocalTarget
from virtbench.targets.target_contract import Target

__all__ = ["WebLab", "WebLabParams"]


class WebLabParams(Params):
    origin: Literal["static-multisite", "wordpress-multisite", "external"] = Field(
        "static-multisite", description="what Varnish caches: generated static pages served by "
        "nginx, a WordPress multisite (nginx + php-fpm + MariaDB), or a server you run")
    sites: int = Field(3, ge=1, le=1000, description="number of sites")
    pages_per_site: int = Field(100, ge=1, le=100000, description="pages in each site "
                                "(wordpress-multisite: WordPress pages, /siteN/page-M/)")
    page_bytes: int = Field(2_000_000, ge=64, le=1 << 30,
                            description="size of every static page (bytes)")
    seed: int = Field(1, ge=0, le=2**63 - 1, description="seed of the generated pages")
    cache_max_age_s: int = Field(
        3600, ge=0, description="Cache-Control max-age the origin sends (s); 0 = no-store")
    origin_limit_rate_bps: int = Field(
        0, ge=0, description="slow the origin to this many bytes/s per response (0 = no limit)")
    external_backend_port: Port | None = Field(
        None, description="origin 'external': the port of your server on 127.0.0.1")
    cache_storage: str = Field(
        "malloc", description="storage when a variant gives no cache_storage knob")
    cache_size: str = Field("1G", description="storage size when a variant gives no cache_size")
    disk_dir: Path = Field(
        Path("/var/tmp"), description="directory on a real disk for 'file-disk' storage")
    connect_timeout_s: float = Field(3.5, ge=0.001, le=3600,
                                     description="Varnish backend connect timeout")
    first_byte_timeout_s: float = Field(60.0, ge=0.001, le=3600,
                                        description="Varnish first-byte timeout")
    between_bytes_timeout_s: float = Field(60.0, ge=0.001, le=3600,
                                           description="Varnish between-bytes timeout")
    cache_memory_mib: int = Field(
        0, ge=0, le=1 << 24, description="memory of the cache server, MiB: varnishd runs in a "
        "memory cgroup with this limit, its page cache included, as in a cache VM of this "
        "size (a file storage larger than it is read from the disk again); 0 = no limit")
    varnish_params: dict[str, str] = Field(
        default_factory=dict, description="extra varnishd -p NAME=VALUE parameters")
    wordpress_media_bytes: int = Field(
        0, ge=0, le=64 << 20, description="wordpress-multisite: about this many bytes of "
        "generated media (an inline noise PNG) added to every page, raising page weight toward "
        "the study's 2 MB")
    wordpress_php_workers: int = Field(
        4, ge=1, le=64, description="wordpress-multisite: php-fpm worker processes")


class WebLab(Lab):
    name: ClassVar[str] = "web"
    description: ClassVar[str] = (
        "origin (static nginx multisite or WordPress multisite) behind Varnish on 127.0.0.1; "
        "each variant restarts Varnish cold with its cache storage")
    Params: ClassVar[type[BaseModel]] = WebLabParams
    tools: ClassVar[tuple[Tool, ...]] = (
        Tool("nginx", "nginx-light", "origin web server"),
        Tool("varnishd", "varnish", "HTTP cache"),
        Tool("varnishstat", "varnish", "cache counters"),
        Tool("ss", "iproute2", "waiting until a server listens"),
    )
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("cache_storage", "where Varnish keeps cached objects (file:/DIR: e.g. a SAN or "
             "iSCSI mount)", parsed_by(lambda value: varnish_cfg.parse_storage(value, "1M"), str),
             values="malloc | file-disk | file-tmpfs | file:/DIR"),
        Knob("cache_size", "Varnish storage size (bytes, or k/M/G/T)",
             parsed_by(varnish_cfg.parse_size, str), values="SIZE, e.g. 256M or 1G"),
    )
    switch_cost: ClassVar[str] = "expensive"
    provides = (WebStack,)

    def __init__(self, params: BaseModel | None, workdir: Path, target: Target) -> None:
        super().__init__(params, workdir, target)
        self.p: WebLabParams = self.params
        self.run_id = f"vbweb-{uuid.uuid4().hex[:10]}"
        self.private = lab_root() / self.run_id
        self.manifest: Manifest | None = None
        self.origin_port = 0
        self.origin_proc: Daemon | None = None
        self.varnish_proc: Daemon | None = None
        self.varnish_port = 0
        self.urls: list[str] = []
        self.paths: list[str] = []
        self.host_header: str | None = None
        self.startup_s: dict[str, float] = {}
        self._storage_files: list[Path] = []
        self._mounts: list[Path] = []
        self._varnish_argv: list[str] = []
        self._varnish_log = self.private / "varnishd.log"
        self._varnish_cgroup: Cgroup | None = None

    # -- checks ------------------------------------------------------------------------------
    def check(self) -> list[str]:
        problems = super().check()
        if self.p.origin == "wordpress-multisite":
            problems += wp_origin.check_tools(self.target.which)
        if self.p.origin == "external" and self.p.external_backend_port is None:
            problems.append("lab web: origin 'external' needs params.external_backend_port")
        try:
            varnish_cfg.parse_storage(self.p.cache_storage, self.p.cache_size)
        except ValueError as exc:
            problems.append(f"lab web: params.{exc}")
        if self.p.cache_memory_mib:
            if not isinstance(self.target, LocalTarget):
                problems.append(f"lab web: params.cache_memory_mib is a cgroup on this machine, "
                                f"but the target is {self.target.describe()}")
            elif CgroupLayout.probe().version_of("memory") is None:
                problems.append(f"lab web: params.cache_memory_mib needs the memory cgroup "
                                f"controller, which this machine lacks ({Cgroup.detect()})")
            elif os.geteuid() != 0:
                problems.append("lab web: params.cache_memory_mib makes a cgroup, which needs "
                                "root: run as root (sudo), or drop the param")
        return problems

    # -- lifecycle ---------------------------------------------------------------------------
    def up(self) -> None:
        problems = self.check()
        if problems:
            raise VirtbenchError("; ".join(problems))
        _check_traversable(lab_root())
        self.manifest = Manifest(lab_root() / f"{self.run_id}.json", self.name)
        self.manifest.add("dir", str(self.private))
        self.private.mkdir(parents=True)
        started = time.monotonic()
        if self.p.origin == "static-multisite":
            self._static_origin()
        elif self.p.origin == "wordpress-multisite":
            self._wordpress_origin()
        else:
            assert self.p.external_backend_port is not None
            self.origin_port = self.p.external_backend_port
            self.paths = ["/"]
        self.startup_s["origin"] = time.monotonic() - started

    def _static_origin(self) -> None:
        t = time.monotonic()
        htdocs = self.private / "htdocs"
        self.paths = generate_site(htdocs, seed=self.p.seed, sites=self.p.sites,
                                   pages_per_site=self.p.pages_per_site,
                                   page_bytes=self.p.page_bytes)
        self.startup_s["generate"] = time.monotonic() - t
        self.start_origin_server(htdocs)

    def _wordpress_origin(self) -> None:
        # Refuse before building anything: the install takes a while.
        wp_origin.check_port_80_free()
        self.paths = wp_origin.start_wordpress(
            self.private, self._wp_spec(), self.target, self._spawn, self.startup_s)
        # WordPress multisite serves only the domain it was installed on (no port).
        self.host_header = wpconfig.SITE_HOST
        self.start_origin_server()

    def _wp_spec(self) -> wp_origin.WordPressSpec:
        return wp_origin.WordPressSpec(
            sites=self.p.sites, pages_per_site=self.p.pages_per_site,
            media_bytes=self.p.wordpress_media_bytes, seed=self.p.seed,
            max_age_s=self.p.cache_max_age_s, limit_rate_bps=self.p.origin_limit_rate_bps,
            php_children=self.p.wordpress_php_workers)

    def start_origin_server(self, htdocs: Path | None = None) -> None:
        """(Re)start the origin's nginx (tests stop it to simulate a dead backend)."""
        if self.p.origin == "wordpress-multisite":
            wp_origin.check_port_80_free()
            self.origin_port = wp_origin.HTTP_PORT
            self.origin_proc = wp_origin.start_nginx(
                self.private, self._wp_spec(), self._spawn)
            return
        htdocs = htdocs or self.private / "htdocs"
        prefix = self.private / "nginx"
        prefix.mkdir(exist_ok=True)
        self.origin_port = self.origin_port or free_port()
        conf = prefix / "nginx.conf"
        conf.write_text(nginx_cfg.nginx_conf(
            prefix=prefix, port=self.origin_port, root=htdocs, max_age_s=self.p.cache_max_age_s,
            limit_rate_bps=self.p.origin_limit_rate_bps))
        log = prefix / "nginx.stderr"
        self.origin_proc = self._spawn("nginx", nginx_cfg.nginx_argv(conf, prefix), log)
        self.origin_proc.wait_for_port(self.origin_port)

    def stop_origin_server(self) -> None:
        if self.origin_proc is not None:
            self.origin_proc.stop()
            self.origin_proc = None

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        if self.manifest is None:
            raise VirtbenchError("lab web: enter() before up()")
        choice = self._storage(variant, knobs)
        misfit = self._misfit(variant, choice)
        if misfit:
            raise VirtbenchError(misfit[0])
        self._stop_varnish()
        started = time.monotonic()
        storage_arg, notes = self._prepare_storage(variant, choice)
        if self.p.cache_memory_mib:
            self._varnish_cgroup = self._memory_cgroup(variant)
            notes["cache_memory"] = (f"varnishd in cgroup {self._varnish_cgroup.name}, memory "
                                     f"limit {self.p.cache_memory_mib} MiB (page cache "
                                     f"included; {Cgroup.detect()})")
        vdir = self.private / f"varnish-{_safe(variant)}"
        vdir.mkdir(exist_ok=True)
        vcl_path = vdir / "default.vcl"
        vcl_path.write_text(varnish_cfg.vcl(
            backend_port=self.origin_port, connect_timeout_s=self.p.connect_timeout_s,
            first_byte_timeout_s=self.p.first_byte_timeout_s,
            between_bytes_timeout_s=self.p.between_bytes_timeout_s,
            host_header=self.host_header))
        self.varnish_port = free_port()
        # timeout_idle: the open model keeps spare keep-alive connections between sends.
        # timeout_linger=0: Varnish adds a worker's counters to MAIN.* only when the worker
        # lets go of the session; with lingering keep-alive sessions MAIN.cache_hit stays
        # frozen until connections close and the hit-ratio timeline would be wrong.
        params = {"timeout_idle": "60", "timeout_linger": "0", **self.p.varnish_params}
        argv = varnish_cfg.varnishd_argv(port=self.varnish_port, workdir=vdir / "work",
                                         vcl_path=vcl_path, storage_arg=storage_arg,
                                         extra_params=params)
        self._varnish_argv = argv
        self._varnish_log = vdir / "varnishd.log"
        varnishd = self._start_varnish()
        self.startup_s["varnish"] = time.monotonic() - started
        base = f"http://127.0.0.1:{self.varnish_port}"
        origin = f"http://127.0.0.1:{self.origin_port}"
        self.urls = [base + p for p in self.paths]
        notes.update({
            "varnishd": " ".join(argv),
            "origin": self.p.origin,
            "pages": str(len(self.paths)),
            "cold_start": "varnishd restarted with empty storage on entering this variant",
        })
        services = self.publish(WebStack(
            base_url=base, urls=tuple(self.urls), origin_url=origin,
            origin_urls=tuple(origin + p for p in self.paths), host_header=self.host_header,
            cache_storage=choice.kind, varnish_workdir=str(vdir / "work"),
            varnish_pid=varnishd.pid, empty_cache=self.empty_cache))
        return LabState(services=services, notes=notes)

    def check_variant(self, variant: str, knobs: Mapping[str, Any]) -> list[str]:
        try:
            choice = self._storage(variant, knobs)
        except VirtbenchError as exc:
            return [str(exc)]
        return self._misfit(variant, choice)

    def _storage(self, variant: str, knobs: Mapping[str, Any]) -> varnish_cfg.StorageChoice:
        try:
            return varnish_cfg.parse_storage(
                str(knobs.get("cache_storage", self.p.cache_storage)),
                str(knobs.get("cache_size", self.p.cache_size)))
        except ValueError as exc:
            raise VirtbenchError(f"variant {variant}: {exc}") from None

    def _misfit(self, variant: str, choice: varnish_cfg.StorageChoice) -> list[str]:
        """Malloc storage lives in varnishd's memory: one larger than the cache server's memory
        would have varnishd killed by the kernel mid-run."""
        limit = self.p.cache_memory_mib << 20
        if limit and choice.kind == "malloc" and varnish_cfg.parse_size(choice.size) >= limit:
            return [f"lab web: variant {variant}: cache_storage malloc of {choice.size} does not "
                    f"fit in params.cache_memory_mib ({self.p.cache_memory_mib} MiB): malloc "
                    "storage is varnishd's own memory; give a smaller cache_size, or file "
                    "storage"]
        return []

    def _memory_cgroup(self, variant: str) -> Cgroup:
        assert self.manifest is not None
        group = Cgroup(f"{self.run_id}-{_safe(variant)}",
                       CgroupLimits(memory_bytes=self.p.cache_memory_mib << 20), self.manifest)
        try:
            group.create()
        except Exception:
            group.remove()
            raise
        return group

    def _start_varnish(self) -> Daemon:
        target = self.target
        if self._varnish_cgroup is not None:
            assert isinstance(target, LocalTarget)  # check() refused the others
            target = CgroupTarget(target, self._varnish_cgroup)
        self.varnish_proc = self._spawn("varnishd", self._varnish_argv, self._varnish_log,
                                        target)
        self.varnish_proc.wait_for_port(self.varnish_port)
        return self.varnish_proc

    def empty_cache(self) -> dict[str, str]:
        """Restart varnishd on the same port with empty storage: a truly cold cache.

        A ban only hides objects (they stay in storage until the lurker evicts them, and
        req.url bans never are); a restart frees the storage, and a file storage starts as a
        new file. Returns notes on what was done (web.load's cache: cold calls this).
        """
        if self.varnish_proc is None:
            raise VirtbenchError("lab web: empty_cache() outside a variant")
        started = time.monotonic()
        self.varnish_proc.stop()
        self.varnish_proc = None
        for path in self._storage_files:
            path.unlink(missing_ok=True)  # varnishd creates it again, empty
        self._start_varnish()
        return {"cache_emptied": f"varnishd restarted with empty storage in "
                                 f"{time.monotonic() - started:.2f} s"}

    def _prepare_storage(self, variant: str, choice: varnish_cfg.StorageChoice
                         ) -> tuple[str, dict[str, str]]:
        assert self.manifest is not None
        size = choice.size
        if choice.kind == "malloc":
            return f"malloc,{size}", {"cache_storage": f"malloc,{size} (process memory)"}
        if choice.kind == "file-tmpfs":
            mount = self.private / f"tmpfs-{_safe(variant)}"
            mount.mkdir(exist_ok=True)
            tmpfs_bytes = varnish_cfg.parse_size(size) + (64 << 20)
            self.manifest.add("mount", str(mount))
            self.target.run(["mount", "-t", "tmpfs", "-o", f"size={tmpfs_bytes}",
                             f"{self.run_id}-tmpfs", str(mount)])
            self._mounts.append(mount)
            directory = mount
        elif choice.kind == "file-disk":
            directory = self.p.disk_dir / self.run_id
            self.manifest.add("dir", str(directory))
            directory.mkdir(parents=True, exist_ok=True)
        else:
            assert choice.path is not None
            directory = choice.path
            if not directory.is_dir():
                raise VirtbenchError(
                    f"variant {variant}: cache_storage directory {directory} does not exist")
        path = directory / f"{self.run_id}-{_safe(variant)}.bin"
        self.manifest.add("file", str(path))
        self._storage_files.append(path)
        fstype = fs_type(directory)
        notes = {"cache_storage": f"file,{path},{size} (filesystem {fstype})"}
        if choice.kind == "file-disk" and fstype in ("tmpfs", "ramfs"):
            notes["warning"] = f"disk_dir {self.p.disk_dir} is on {fstype}, not a disk"
        return f"file,{path},{size}", notes

    def leave(self, variant: str) -> None:
        self._stop_varnish()

    def serving_daemons(self) -> dict[str, int]:
        """Every daemon of the lab serves the requests: varnishd, the origin's nginx and, for
        WordPress, php-fpm and MariaDB (each recorded in the manifest while it runs)."""
        if self.manifest is None:
            return {}
        found: dict[str, int] = {}
        for record in self.manifest.items("pid"):
            name = str(record.get("what", "daemon"))
            key, n = name, 1
            while key in found:  # two daemons of one program: both count
                n += 1
                key = f"{name}#{n}"
            found[key] = int(record["pid"])
        return found

    def _stop_varnish(self) -> None:
        if self.varnish_proc is not None:
            self.varnish_proc.stop()
            self.varnish_proc = None
        if self._varnish_cgroup is not None:
            group, self._varnish_cgroup = self._varnish_cgroup, None
            group.remove()
        for path in self._storage_files:
            path.unlink(missing_ok=True)
            if self.manifest is not None:
                self.manifest.remove("file", str(path))
        self._storage_files.clear()
        for mount in self._mounts:
            self.target.run(["umount", str(mount)], check=False)
            if self.manifest is not None:
                self.manifest.remove("mount", str(mount))
        self._mounts.clear()

    def down(self) -> None:
        self._stop_varnish()
        self.stop_origin_server()
        if self.manifest is not None:
            WebLab.clean(self.manifest)
            self.manifest.delete()
            self.manifest = None

    # -- processes ---------------------------------------------------------------------------
    def _spawn(self, what: str, argv: list[str], log: Path,
               target: Target | None = None) -> Daemon:
        """A server whose command line names our private directory (cleanup's proof)."""
        assert self.manifest is not None
        return start_recorded(self.manifest, target or self.target, argv, what=what,
                              marker=str(self.private), log=log)

    @classmethod
    def clean(cls, manifest: Manifest) -> list[str]:
        """Stop our leftover nginx/varnishd/php-fpm/mariadbd by PID; unmount; remove files."""
        removed = clean_recorded(manifest)
        for path in manifest.items("cgroup"):
            if remove_cgroup_dir(Path(path)):
                removed.append(f"removed cgroup {path}")
                manifest.remove("cgroup", path)
        for mount in manifest.items("mount"):
            if Path(mount).is_mount():
                LocalTarget().run(["umount", mount], check=False)
                removed.append(f"unmounted {mount}")
            manifest.remove("mount", mount)
        for path in manifest.items("file"):
            if Path(path).exists():
                Path(path).unlink()
                removed.append(f"removed {path}")
            manifest.remove("file", path)
        for path in manifest.items("dir"):
            if Path(path).exists():
                shutil.rmtree(path, ignore_errors=True)
                removed.append(f"removed {path}")
            manifest.remove("dir", path)
        return removed


def _check_traversable(directory: Path) -> None:
    """nginx workers and the Varnish child run as unprivileged users: they must reach the
    private directory."""
    for part in [directory, *directory.parents]:
        if part.exists() and not part.stat().st_mode & 0o001:
            raise VirtbenchError(
                f"lab web: {part} is not searchable by other users (mode "
                f"{oct(part.stat().st_mode & 0o777)}), so nginx and varnishd cannot read the lab; "
                "set VIRTBENCH_LAB_ROOT to a directory whose parents have mode 755")


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:40]

