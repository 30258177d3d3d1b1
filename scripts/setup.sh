#!/usr/bin/env bash
# Create .venv and install alkit with every extra its tests and benchmarks exercise (dev, postgres, ray,
# text, image, data, vlm, bench).  Needs Python 3.11 or newer (PYTHON=python3.11 names one).
# torch is pinned in the same pip command so no other package can pull a CUDA build here;
# pyproject.toml keeps an ordinary range for users elsewhere.
# PostgreSQL server binaries (for the PostgreSQL store tests, which start a throwaway server)
# come from the distribution: installed with apt-get when missing and we are root on Debian/Ubuntu
# (ALKIT_SKIP_APT=1 to skip); otherwise those tests skip with a message naming what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

have_pg() { command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }
have_fashion() { [ -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; }
if { ! have_pg || ! have_fashion; } && [ "${ALKIT_SKIP_APT:-0}" != 1 ] && command -v apt-get >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends postgresql dataset-fashion-mnist >/dev/null
    else
        echo "setup.sh: not root; run 'sudo apt-get install postgresql dataset-fashion-mnist' for the PostgreSQL store and Fashion-MNIST tests" >&2
    fi
fi

"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "setup.sh: alkit needs Python 3.11 or newer; $PY is $("$PY" --version 2>&1): set PYTHON=python3.11 (or newer)" >&2
    exit 1
}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0" -e ".[dev,postgres,ray,text,image,data,vlm,bench]"
