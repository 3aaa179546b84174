"""Without the libvirt binding the CLI still starts, and `virtbench kvm ...` says how to install
it; nothing else about the kvm command group may go missing silently.

Each case runs the real CLI in a fresh interpreter in which `import libvirt` fails, so no
module imported earlier by other tests can hide a top-level `import libvirt`."""

from __future__ import annotations

import subprocess
import sys

import pytest

BLOCK_LIBVIRT = (
    "import sys; sys.modules['libvirt'] = None; sys.modules['libvirt_qemu'] = None\n"
    "from virtbench.cli.root import main\n"
    "sys.argv = ['virtbench', *sys.argv[1:]]\n"
    "main()\n"
)


def _virtbench_without_libvirt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK_LIBVIRT, *args], capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize("args", [["kvm", "inventory"], ["kvm", "rollback", "guest1"]])
def test_kvm_commands_name_the_package_and_how_to_install_it(args: list[str]) -> None:
    result = _virtbench_without_libvirt(*args)
    assert result.returncode == 2, result.stderr
    message = " ".join(result.stderr.split())
    for needed in ("pip install libvirt-python", "bash scripts/install.sh", "libvirt-dev",
                   "pkg-config"):
        assert needed in message
    assert "Traceback" not in result.stderr


def test_the_rest_of_the_cli_and_kvm_help_work_without_libvirt() -> None:
    result = _virtbench_without_libvirt("kvm", "--help")
    assert result.returncode == 0, result.stderr
    assert "inventory" in result.stdout and "rollback" in result.stdout
    assert _virtbench_without_libvirt("labs").returncode == 0
