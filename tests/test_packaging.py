"""What a built alkit carries (a packaging check on a built wheel and sdist): its licence, the test suite with the
conftest and benchmark helpers it imports, the docs its README points to; and only the alkit package."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build(kind: str, out: Path, source: Path = ROOT) -> Path:
    script = f"from setuptools import build_meta as b; print(b.build_{kind}({str(out)!r}))"
    done = subprocess.run([sys.executable, "-c", script], cwd=source, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return out / done.stdout.strip().splitlines()[-1]


def test_the_sdist_carries_the_licence_the_tests_conftest_and_the_docs(tmp_path: Path) -> None:
    with tarfile.open(_build("sdist", tmp_path)) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    for needed in ("LICENSE", "tests/conftest.py", "benchmarks/bench_common.py", "docs/commands.md",
                   "docs/learner.md", "docs/preset.md", "README.md", "alkit/py.typed"):
        assert needed in names, needed  # 17 test modules could not be collected without conftest / bench_common
    assert not any(n.startswith("benchmarks/results/") for n in names)  # tens of MB: they stay in the repository


def test_the_wheel_holds_alkit_its_licence_and_types_only(tmp_path: Path) -> None:
    with tarfile.open(_build("sdist", tmp_path)) as sdist:  # the wheel is built from the sdist, as pip does (a
        sdist.extractall(tmp_path / "src", filter="data")  # wheel built in the checkout leaves build/ there)
    source = next((tmp_path / "src").iterdir())
    with zipfile.ZipFile(_build("wheel", tmp_path, source)) as wheel:
        names = wheel.namelist()
        meta = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert {n.split("/")[0] for n in names} == {"alkit", "alkit-0.1.0.dist-info"}, sorted({n.split("/")[0] for n in names})
    assert "alkit/py.typed" in names and "alkit/learners/__init__.py" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names) and "License-File: LICENSE" in meta
    assert "Requires-Dist: scipy" in meta  # imported directly, so declared
