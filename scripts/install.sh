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
  # Without ensurepip's pip and setuptools (6-8 s, compiled, then replaced by the newer pip):
  # Debian's pip installs the newest pip into the environment instead (about 2 s).
  python3 -m venv --without-pip .venv
fi
# What the Python environment is made from; when none of it changed since the last install and
# the environment still imports, pip is not asked again (a rerun by scripts/test.sh takes
# seconds, not a minute). Sources need no reinstall: the install is editable.
stamp_file=.venv/.virtbench-install-stamp
# The capture decoder (setup.py: the C extension virtbench.net_qos._capscan) is compiled by pip.
stamp=$( { echo "$extras"; python3 --version; cat pyproject.toml setup.py \
  src/virtbench/net_qos/_capscan.c scripts/install.sh; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp_file" 2>/dev/null)" = "$stamp" ] \
   && .venv/bin/python -c "import virtbench.cli.entry, virtbench.net_qos._capscan" 2>/dev/null; then
  # The sources changed since (a pull, a merge, an edit): their byte-code too, or where
  # PYTHONDONTWRITEBYTECODE is set every command compiles each changed module it imports
  # again (82 stale modules after one day's merges cost `run FILE --check` 0.15 G
  # instructions, a seventh of it). compileall rewrites only the stale ones.
  .venv/bin/python -m compileall -q -j 0 src/virtbench >/dev/null || true
  echo "virtbench installed: up to date (.venv/bin/virtbench)"
  exit 0
fi
rm -f "$stamp_file"
if .venv/bin/python -m pip --version >/dev/null 2>&1; then
  .venv/bin/pip install -q --upgrade pip
else
  python3 -m pip --python .venv/bin/python install -q --no-compile --upgrade pip \
    || .venv/bin/python -m ensurepip --upgrade --default-pip >/dev/null  # python3 without pip
fi
# (pip byte-compiles on one core: the environment is compiled below on every core instead)
.venv/bin/pip install -q --no-compile -e ".[${extras}]"
# Byte-code now: where PYTHONDONTWRITEBYTECODE is set, every command would otherwise compile
# each module it imports (virtbench parse pcap competes with tcpdump -r). Not what nothing
# imports after the install: the packages' own test suites (a fifth of the work), pip and
# setuptools, mypy's sources (it runs as compiled modules) and pygments' lexers (together a
# quarter less time). Some packages ship files not meant to compile; pip's step skips them too.
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
unused='/(tests?|pip|setuptools|pkg_resources|mypyc?)/|/pygments/lexers/'
.venv/bin/python -m compileall -q -j 0 -x "$unused" "$site" src/virtbench >/dev/null || true
.venv/bin/virtbench --help >/dev/null
echo "$stamp" > "$stamp_file"
echo "virtbench installed: ok (.venv/bin/virtbench)"
