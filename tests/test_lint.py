"""The library and the tests pass ruff (settings in pyproject.toml)."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_library_and_tests_pass_ruff():
    ruff = Path(sys.executable).with_name("ruff")
    executable = str(ruff) if ruff.exists() else shutil.which("ruff")
    result = subprocess.run([executable, "check", "--no-cache", "lib", "tests"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
