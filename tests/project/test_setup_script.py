"""scripts/setup.sh installs once: after `./test.sh` (extras prepare,test), `./run.sh` (extras prepare) does not
run pip again; new extras or a changed pyproject.toml do, keeping what was installed. Run on a copy of the script
in a scratch project whose .venv/bin/python only records how it was called."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def scratch_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    (project / "scripts" / "setup.sh").write_text((REPO / "scripts" / "setup.sh").read_text(encoding="utf-8"))
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    python = project / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\necho "$@" >> "$(dirname "$0")/../../calls"\n', encoding="utf-8")
    python.chmod(0o755)
    return project


def setup(project: Path, extras: str) -> list[str]:
    """Run setup.sh with these extras; the pip calls it made."""
    calls = project / "calls"
    calls.unlink(missing_ok=True)
    env = {**os.environ, "BRANCHPOINT_SKIP_SYSTEM_PACKAGES": "1"}
    subprocess.run(["bash", "scripts/setup.sh", extras], cwd=project, env=env, check=True, timeout=60)
    return calls.read_text().splitlines() if calls.exists() else []


def test_test_then_run_installs_once(tmp_path):
    project = scratch_project(tmp_path)
    first = setup(project, "prepare,test")  # ./test.sh
    assert "-m pip install -q -e .[prepare,test]" in first
    assert setup(project, "prepare") == []  # ./run.sh: nothing to install
    assert setup(project, "test,prepare") == []
    assert "-m pip install -q -e .[cuda,prepare,test]" in setup(project, "cuda")  # more extras: the union
    assert setup(project, "prepare,test") == []
    (project / "pyproject.toml").write_text("[project]\nname = 'y'\n", encoding="utf-8")
    assert "-m pip install -q -e .[cuda,prepare,test]" in setup(project, "prepare")  # changed: all again
