#!/usr/bin/env bash
# Create .venv and install alkit with every extra its tests exercise.
# torch is pinned in the same pip command so no other package can pull a CUDA build here;
# pyproject.toml keeps an ordinary range for users elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0" -e ".[dev,text,image,data]"
