"""Apply a tuned domain XML safely: save the original, restart, verify inside, roll back.

State machine (each phase is written to the saved state before it starts, so ``virtbench kvm
rollback`` can finish the job after a crash or Ctrl-C):

    saved -> stopping -> starting -> verifying -> applied
       any failure (exception, KeyboardInterrupt, SIGTERM turned into an exception)
       -> rollback: stop whatever runs, re-define the original persistent XML, start the
          original again if it was running, check the CPU is the original's, forget the state.

``transient`` (the study's way): destroy + create from the tuned XML; a persistent domain's
stored definition is never changed. ``persistent``: define the tuned XML + restart.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from virtbench.kvm.domxml import cpu_diff, read_cpu
from virtbench.kvm.flags import linux_name
from virtbench.kvm.state import SavedState
from virtbench.model import VirtbenchError
from virtbench.targets.libvirt_connection import libvirt_module

__all__ = [
    "ApplyResult",
    "DomainTuner",
    "GuestProbe",
    "VerificationFailed",
    "state_key",
]


class GuestProbe(Protocol):
    """Reads the CPU flags a guest sees from inside it."""

    def describe(self) -> str: ...

    def wait_flags(self, timeout: float) -> frozenset[str]:
        """Wait until the guest answers; return its flags in libvirt's spelling."""
        ...


class VerificationFailed(VirtbenchError):
    """The guest does not see the CPU it was configured with."""


@dataclass
class ApplyResult:
    domain: str
    mode: str
    guest_flags: frozenset[str] | None
    verified_by: str
    steps: list[str] = field(default_factory=list)


def state_key(uri: str, uuid: str) -> str:
    return f"kvm-original:{uri}:{uuid}"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


class DomainTuner:
    """Changes one named domain and can always put it back.

    ``log`` receives one line per step (the CLI prints them; the lab keeps them as notes).
    """

    def __init__(
        self,
        conn: Any,
        domain: str,
        state: SavedState,
        *,
        shutdown_timeout: float = 60.0,
        boot_timeout: float = 300.0,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.libvirt = libvirt_module()
        self.conn = conn
        self.domain = domain
        self.state = state
        self.shutdown_timeout = shutdown_timeout
        self.boot_timeout = boot_timeout
        self.log = log or (lambda _line: None)
        self.uri = conn.getURI()
        dom = self._lookup()
        if dom is None:
            raise VirtbenchError(f"no domain named '{domain}' on {self.uri}")
        self.uuid: str = dom.UUIDString()
        self.key = state_key(self.uri, self.uuid)

    # -- libvirt helpers -------------------------------------------------------------------
    def _lookup(self) -> Any | None:
        try:
            return self.conn.lookupByName(self.domain)
        except self.libvirt.libvirtError:
            return None

    def _lookup_uuid(self) -> Any | None:
        try:
            return self.conn.lookupByUUIDString(self.uuid)
        except self.libvirt.libvirtError:
            return None

    def _stop(self, dom: Any, graceful: bool = True) -> None:
        """Shut the domain down (ACPI, up to shutdown_timeout s), then destroy what is left."""
        if not dom.isActive():
            return
        if graceful and self.shutdown_timeout > 0:
            self.log(f"shutting down {self.domain} (up to {self.shutdown_timeout:.0f} s)")
            try:
                dom.shutdown()
                deadline = time.monotonic() + self.shutdown_timeout
                while time.monotonic() < deadline:
                    if not self._is_active(dom):
                        return
                    time.sleep(0.5)
            except self.libvirt.libvirtError:
                pass
        if self._is_active(dom):
            self.log(f"destroying {self.domain}")
            dom.destroy()

    def _is_active(self, dom: Any) -> bool:
        try:
            return bool(dom.isActive())
        except self.libvirt.libvirtError:
            return False  # a transient domain disappears when it stops

    # -- saved original --------------------------------------------------------------------
    def original(self) -> dict[str, Any] | None:
        return self.state.load(self.key)

    def save_original(self) -> dict[str, Any]:
        """Record the domain as it is now, unless an earlier original is still saved (then
        that one stays: it is the configuration before any virtbench change)."""
        saved = self.original()
        if saved is not None:
            self.log(f"original of {self.domain} already saved at {saved['saved_at']}; keeping it")
            return saved
        dom = self._lookup_uuid()
        if dom is None:
            raise VirtbenchError(f"domain '{self.domain}' disappeared")
        lv = self.libvirt
        persistent = bool(dom.isPersistent())
        active = bool(dom.isActive())
        inactive_xml = dom.XMLDesc(lv.VIR_DOMAIN_XML_INACTIVE | lv.VIR_DOMAIN_XML_SECURE) \
            if persistent else None
        live_xml = dom.XMLDesc(lv.VIR_DOMAIN_XML_MIGRATABLE | lv.VIR_DOMAIN_XML_SECURE) \
            if active else None
        record = {
            "uri": self.uri,
            "domain": self.domain,
            "uuid": self.uuid,
            "persistent": persistent,
            "active": active,
            "inactive_xml": inactive_xml,
            "live_xml": live_xml,
            "live_cpu_differs": bool(
                persistent and active and cpu_diff(str(inactive_xml), str(live_xml))
            ),
            "saved_at": _now(),
            "phase": "saved",
        }
        self.state.save(self.key, record)
        self.log(f"saved original XML of {self.domain} ({'running' if active else 'shut off'}, "
                 f"{'persistent' if persistent else 'transient'})")
        return record

    def base_xml(self) -> str:
        """The XML a tuning starts from: the original's running config, else its definition."""
        saved = self.original() or self.save_original()
        return str(saved["live_xml"] or saved["inactive_xml"])

    def _phase(self, phase: str) -> None:
        saved = self.original()
        if saved is not None:
            saved["phase"] = phase
            self.state.save(self.key, saved)

    # -- apply -----------------------------------------------------------------------------
    def apply(
        self,
        tuned_xml: str,
        *,
        persistent: bool = False,
        probe: GuestProbe | None = None,
        expect_present: tuple[str, ...] = (),
        expect_absent: tuple[str, ...] = (),
    ) -> ApplyResult:
        """Start the domain with ``tuned_xml`` and verify; roll back on any failure."""
        self.save_original()
        mode = "persistent" if persistent else "transient"
        result = ApplyResult(self.domain, mode, None, "not verified (no guest access)")
        try:
            dom = self._lookup_uuid()
            if dom is not None and self._is_active(dom):
                self._phase("stopping")
                self._stop(dom)
            self._phase("starting")
            if persistent:
                self.log(f"defining tuned {self.domain} and starting it")
                dom = self.conn.defineXML(tuned_xml)
                dom.create()
            else:
                self.log(f"creating {self.domain} from the tuned XML (transient)")
                dom = self.conn.createXML(tuned_xml, 0)
            self._phase("verifying")
            if probe is not None:
                self.log(f"waiting for the guest ({probe.describe()}, up to "
                         f"{self.boot_timeout:.0f} s)")
                flags = probe.wait_flags(self.boot_timeout)
                result.guest_flags = flags
                result.verified_by = probe.describe()
                absent = [f for f in expect_present if f not in flags]
                present = [f for f in expect_absent if f in flags]
                if absent or present:
                    problems = []
                    if absent:
                        problems.append("missing " + ", ".join(
                            f"{f} ({linux_name(f)})" for f in absent))
                    if present:
                        problems.append("still visible " + ", ".join(present))
                    raise VerificationFailed(
                        f"guest {self.domain} does not see the tuned CPU: " + "; ".join(problems)
                    )
                self.log(f"verified inside the guest: {', '.join(expect_present) or '-'} visible"
                         + (f"; {', '.join(expect_absent)} hidden" if expect_absent else ""))
            self._phase("applied")
            return result
        except BaseException as exc:
            self.log(f"apply failed ({type(exc).__name__}: {exc}); rolling back")
            try:
                self.rollback()
            except Exception as rb_exc:
                self.log(f"ROLLBACK FAILED: {rb_exc}; the original is still saved under "
                         f"{self.key}; run `virtbench kvm rollback {self.domain}`")
            raise

    # -- rollback --------------------------------------------------------------------------
    def rollback(self, *, forget: bool = True) -> bool:
        """Restore the saved original; False when nothing was saved. ``forget=False`` keeps
        the saved copy (a lab restores between variants and again at the end)."""
        saved = self.original()
        if saved is None:
            return False
        self._phase("rolling-back")
        dom = self._lookup_uuid()
        if dom is not None and self._runs_original(dom, saved):
            # A run whose last variant was the original (its block restarted the domain
            # with it) needs no second restart: what rollback would start runs already.
            self.log(f"{self.domain} already runs its original CPU configuration")
        else:
            self._restore(dom, saved)
        self._check_restored(saved)
        if forget:
            self.state.delete(self.key)
        else:
            saved["phase"] = "saved"
            self.state.save(self.key, saved)
        self.log(f"{self.domain} is back to its original CPU configuration")
        return True

    def _runs_original(self, dom: Any, saved: dict[str, Any]) -> bool:
        """True when the domain runs now, as originally, with the original's CPU, and (if
        persistent) its definition has the original's CPU: nothing to stop or start."""
        if not saved["active"] or saved["live_xml"] is None or not self._is_active(dom):
            return False
        lv = self.libvirt
        if cpu_diff(dom.XMLDesc(lv.VIR_DOMAIN_XML_MIGRATABLE), saved["live_xml"]):
            return False
        return not saved["persistent"] or not cpu_diff(
            dom.XMLDesc(lv.VIR_DOMAIN_XML_INACTIVE), saved["inactive_xml"])

    def _restore(self, dom: Any, saved: dict[str, Any]) -> None:
        """Stop whatever runs, re-define the original and start it if it was running."""
        if dom is not None and self._is_active(dom):
            self._stop(dom)
        if saved["persistent"]:
            self.log(f"re-defining the original {self.domain}")
            dom = self.conn.defineXML(saved["inactive_xml"])
        if saved["active"]:
            if dom is not None and saved["persistent"] and not saved["live_cpu_differs"]:
                self.log(f"starting the original {self.domain}")
                dom.create()
            else:
                self.log(f"creating the original {self.domain} from its saved live XML")
                self.conn.createXML(saved["live_xml"], 0)

    def _check_restored(self, saved: dict[str, Any]) -> None:
        dom = self._lookup_uuid()
        active = dom is not None and self._is_active(dom)
        if active != saved["active"]:
            raise VirtbenchError(f"after rollback {self.domain} is "
                                 f"{'running' if active else 'not running'}, originally "
                                 f"{'running' if saved['active'] else 'not running'}")
        lv = self.libvirt
        if saved["persistent"] and dom is not None:
            now = dom.XMLDesc(lv.VIR_DOMAIN_XML_INACTIVE)
            if cpu_diff(now, saved["inactive_xml"]):
                raise VirtbenchError(f"after rollback the defined CPU of {self.domain} is "
                                     f"{read_cpu(now).summary()}, not the original")
