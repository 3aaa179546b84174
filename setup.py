"""The capture decoder, virtbench.net_qos._capscan (src/virtbench/net_qos/_capscan.c): compiled
by every install, editable ones included (gcc and the Python headers: scripts/apt-packages.txt).
Everything else about the package is in pyproject.toml; setuptools reads both. A setup.py,
because pyproject.toml's `[tool.setuptools] ext-modules` is still experimental (it warned three
times per install)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("virtbench.net_qos._capscan",
                             sources=["src/virtbench/net_qos/_capscan.c"])])
