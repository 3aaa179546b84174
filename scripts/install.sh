#!/usr/bin/env bash
# Install everything virtbench needs on Debian 12: the Debian packages listed in
# scripts/apt-packages.txt and a Python virtual environment (.venv) with virtbench in it.
#   scripts/install.sh          users
#   scripts/install.sh --dev    plus test and lint tools
set -euo pipefail
cd "$(dirname "$0")/.."
extras="kvm"
[ "${1:-}" = "--dev" ] && extras="kvm,dev"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
lists=(scripts/apt-packages.txt)
# Development-only tools (e.g. ansible, which the fleet's playbook test runs).
[ "${1:-}" = "--dev" ] && lists+=(scripts/apt-packages-dev.txt)
mapfile -t packages < <(cat "${lists[@]}" | grep -v '^\s*#' | grep -v '^\s*$')
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing ${#missing[@]} Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# What the Python environment is made from; when none of it changed since the last install and
# the environment still imports, pip is not asked again (a rerun by scripts/test.sh takes
# seconds, not a minute). Sources need no reinstall: the install is editable.
stamp_file=.venv/.virtbench-install-stamp
stamp=$( { echo "$extras"; python3 --version; cat pyproject.toml src/virtbench/net_qos/_capscan.c \
  scripts/install.sh scripts/build_capture_kernels.py src/virtbench/net_qos/capture_kernels.py; } \
  | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp_file" 2>/dev/null)" = "$stamp" ] \
   && .venv/bin/python -c "import virtbench.cli.entry, virtbench.net_qos._capscan" 2>/dev/null; then
  echo "virtbench installed: up to date (.venv/bin/virtbench)"
  exit 0
fi
rm -f "$stamp_file"
.venv/bin/pip install -q --upgrade pip
# pip byte-compiles on one core; installed without it, the environment is compiled below on
# every core, while the capture loops are built beside it (the install: 86 s → 60-67 s here).
.venv/bin/pip install -q --no-compile -e ".[${extras}]"
# Byte-code now: where PYTHONDONTWRITEBYTECODE is set, every command would otherwise compile
# each module it imports (virtbench parse pcap competes with tcpdump -r).
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
# (not the packages' own test suites, which nothing imports: a fifth of the work)
.venv/bin/python -m compileall -q -j 0 -x '/tests?/' "$site" src/virtbench >/dev/null &
compiling=$!
# Capture analysis loops as machine code (numba.pycc): no JIT start-up per command. Optional.
.venv/bin/python scripts/build_capture_kernels.py >/dev/null 2>&1 \
  || echo "note: capture loops not compiled ahead of time; they are JIT-compiled on first use"
# Some packages ship files that are not meant to compile; pip's own step ignores them too.
wait "$compiling" || true
.venv/bin/virtbench --help >/dev/null
echo "$stamp" > "$stamp_file"
echo "virtbench installed: ok (.venv/bin/virtbench)"
