"""cpu.aes: AES-128-ECB with PKCS7 via `cryptography` — study 000's method and a bulk mode."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.resources import files
from typing import Any, Literal

from pydantic import Field

from virtbench.contract import MIN_SIZE_MIB, Params
from virtbench.model import Artifact, Better, Measurement, Metric
from virtbench.workloads.cpu.features import CPU_FEATURES_KNOB, feature_set, openssl_realisation
from virtbench.workloads.probe import probe_window, run_probe
from virtbench.workloads.workload_contract import Realisation, TrialContext, TrialResult, Workload

__all__ = ["WORKLOADS", "AesWorkload", "study_plaintext"]


def study_plaintext() -> bytes:
    """The ~2 KB English text of study 000's appendix (Gambar 1)."""
    return files("virtbench.workloads.cpu").joinpath("aes_plaintext.txt").read_bytes().strip()


class AesParams(Params):
    mode: Literal["study", "bulk", "both"] = Field(
        "both", description="study: ~2 KB text, fresh Cipher per op; bulk: `chunk_kib` chunks")
    ops: int = Field(1000, ge=1, le=10_000_000,
                     description="study-mode operations per trial (the study averaged 1000)")
    summary: Literal["median", "mean"] = Field(
        "median", description="study mode: how a trial summarises its `ops` timings; the study "
                              "took the mean, the median keeps interrupts out")
    bulk_mib: float = Field(64, ge=MIN_SIZE_MIB, le=65536,
                           description="bulk-mode bytes per trial, MiB (at least 1 KiB)")
    chunk_kib: int = Field(64, ge=1, le=65536,
                           description="bulk-mode bytes per update call, KiB; 64 amortises "
                                       "Python's per-call cost that openssl speed's C loop "
                                       "over 16 KB blocks does not pay")


class AesWorkload(Workload):
    name = "cpu.aes"
    description = ("AES-128-ECB with PKCS7 padding through `cryptography`'s OpenSSL; AES-NI, "
                   "SSSE3 (vpaes) and AVX paths are masked per variant with OPENSSL_ia32cap")
    metrics = (
        Metric("encrypt_time_s", "s", Better.LOWER,
               "study method: time of encryptor.update+finalize of the padded ~2 KB text, a "
               "fresh Cipher per operation; the median (or, with summary: mean, the study's "
               "mean) of `ops` operations", primary=True),
        Metric("decrypt_time_s", "s", Better.LOWER,
               "study method: time of decryptor.update+finalize of the ciphertext, a fresh "
               "Cipher per operation; median (or mean) of `ops` operations", primary=True),
        Metric("bulk_throughput_Bps", "B/s", Better.HIGHER,
               "bulk mode: bytes encrypted / time, one encryptor over `chunk_kib` chunks, the "
               "median of 8 equal segments of `bulk_mib` "
               "(compare with `openssl speed -evp aes-128-ecb`)", primary=True),
    )
    python_modules = (("cryptography", "cryptography"),)
    Params = AesParams
    knobs = (CPU_FEATURES_KNOB,)
    timeout_s = 600.0  # a probe of seconds; minutes only on a very slow or busy target

    def active_metrics(self) -> list[Metric]:
        study = self.params.mode in ("study", "both")
        bulk = self.params.mode in ("bulk", "both")
        return [m for m in self.metrics
                if (bulk if m.name.startswith("bulk") else study)]

    def primary_metrics(self) -> list[Metric]:
        return [m for m in self.active_metrics() if m.primary]

    def realise(self, knobs: Mapping[str, Any]) -> Realisation:
        return openssl_realisation(feature_set(knobs), self.name)

    def run(self, ctx: TrialContext) -> TrialResult:
        bulk_bytes = int(self.params.bulk_mib * 1024 * 1024)
        result, raw = run_probe(
            ctx.target, "virtbench.workloads.cpu", "_probe_aes.py",
            [self.params.mode, str(self.params.ops), str(bulk_bytes), study_plaintext().hex(),
             str(self.params.chunk_kib * 1024), self.params.summary],
            ctx.env)
        measurements = [Measurement(m.name, float(result[m.name]))
                        for m in self.active_metrics() if m.name in result]
        return TrialResult(measurements,
                           artifacts=[Artifact("probe.json", raw.encode(), "application/json")],
                           window=probe_window(result))


WORKLOADS = (AesWorkload,)
