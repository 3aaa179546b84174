import pytest

from virtbench.model import VirtbenchError
from virtbench.workloads.cpu.features import (
    crc32c_realisation,
    feature_set,
    openssl_realisation,
    x265_realisation,
)


def _mask(value: str) -> tuple[int, int]:
    first, second = value.split(":")
    return int(first.lstrip("~"), 16), int(second.lstrip("~"), 16)


def test_default_hides_aesni_and_ssse3_in_both_words() -> None:
    real = openssl_realisation(feature_set({"cpu_features": []}), "cpu.aes")
    word1, word2 = _mask(real.env["OPENSSL_ia32cap"] or "")
    assert word1 & (1 << 57) and word1 & (1 << 41)  # AES-NI, SSSE3
    assert word2 & (1 << 41)  # VAES in the second word
    assert (real.env["OPENSSL_ia32cap"] or "").count(":") == 1  # always both words


def test_granting_aes_keeps_aesni_visible() -> None:
    real = openssl_realisation(feature_set({"cpu_features": ["aes", "ssse3"]}), "cpu.aes")
    word1, _ = _mask(real.env["OPENSSL_ia32cap"] or "")
    assert not word1 & (1 << 57) and not word1 & (1 << 41)


def test_host_means_no_mask() -> None:
    real = openssl_realisation(feature_set({"cpu_features": "host"}), "cpu.aes")
    assert real.env == {"OPENSSL_ia32cap": None}
    assert feature_set({}).is_host


def test_crc32c_software_unless_sse42() -> None:
    assert crc32c_realisation(feature_set({"cpu_features": []}), "c").env == {
        "CRC32C_SW_MODE": "force"}
    assert crc32c_realisation(feature_set({"cpu_features": ["sse4.2"]}), "c").env == {
        "CRC32C_SW_MODE": None}


@pytest.mark.parametrize(("features", "level"), [
    ([], "sse2"),
    (["ssse3"], "ssse3"),
    (["ssse3", "sse4.1"], "sse4.1"),
    (["ssse3", "sse4.1", "sse4.2", "sse4a", "aes"], "sse4.2"),
    (["sse4.2"], "sse2"),
    (["ssse3", "sse4.2"], "ssse3"),
])
def test_x265_level_is_highest_complete_prefix(features: list[str], level: str) -> None:
    assert x265_realisation(feature_set({"cpu_features": features}), "x").settings["asm"] == level


def test_x265_reports_what_it_cannot_express() -> None:
    real = x265_realisation(feature_set({"cpu_features": ["sse4.2", "sse4a"]}), "media.x265")
    text = " ".join(real.limitations)
    assert "sse4.2 cannot be used without every lower level" in text
    assert "asm=sse2" in text
    assert "sse4a: not used by media.x265" in text


def test_unknown_feature_is_refused_by_name() -> None:
    with pytest.raises(VirtbenchError, match="unknown CPU feature 'sse5'"):
        feature_set({"cpu_features": ["sse5"]})
    assert feature_set({"cpu_features": ["SSE4_2"]}).allowed == frozenset({"sse4.2"})
