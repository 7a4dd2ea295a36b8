"""The desktop launcher and the `branchpoint` gui-script: installed and uninstalled in a scratch home by the real
gui-script entry point in a child process with no display (and no model prepared, none prepared by it), the
.desktop file checked by desktop-file-validate; a saved run given as the only argument opens in the window."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gui.shell.desktop import MAIN, PNG_SIZES, desktop_entry, exec_argument

REPO = Path(__file__).resolve().parents[2]


def gui_script_target() -> str:
    """What pyproject.toml installs as the `branchpoint` gui-script ("module:function")."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project["gui-scripts"]["branchpoint"]


def run_gui_script(args: list[str], home: Path, extra_env: dict[str, str] | None = None):
    """Run the gui-script's function as pip's generated launcher does (sys.argv = script + args), with no
    display, an empty scratch home and an empty model cache; a window opening instead would hit the timeout."""
    module, function = gui_script_target().split(":")
    env = {key: value for key, value in os.environ.items()
           if key not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "XDG_DATA_HOME")}
    env.update(HOME=str(home), BRANCHPOINT_CACHE_DIR=str(home / "cache"), PYTHONPATH=str(REPO),
               **(extra_env or {}))
    code = f"import sys; sys.argv[0] = 'branchpoint'; from {module} import {function}; {function}()"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def desktop_keys(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines() if "=" in line)


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def assert_validates(path: Path) -> None:
    if shutil.which("desktop-file-validate") is None:
        if os.environ.get("CI"):
            pytest.fail("desktop-file-validate is missing: scripts/setup.sh installs desktop-file-utils")
        pytest.skip("desktop-file-validate not installed (apt install desktop-file-utils)")
    done = subprocess.run(["desktop-file-validate", str(path)], capture_output=True, text=True)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout


def test_the_gui_script_installs_and_uninstalls_exactly_the_launcher_without_a_display(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    done = run_gui_script(["--gui-install-desktop"], home)
    assert done.returncode == 0, done.stderr
    share = home / ".local" / "share"
    launcher = share / "applications" / "branchpoint.desktop"
    hicolor = share / "icons" / "hicolor"
    icons = [hicolor / "scalable" / "apps" / "branchpoint.svg",
             *(hicolor / f"{n}x{n}" / "apps" / "branchpoint.png" for n in PNG_SIZES)]
    assert files_under(home) == sorted([launcher, *icons])  # nothing else: no model prepared, no cache
    assert str(launcher) in done.stdout
    entry = desktop_keys(launcher)
    assert entry["Exec"] == f"{sys.executable} {MAIN} %f" and MAIN.is_file() and Path(sys.executable).is_absolute()
    assert entry["Icon"] == "branchpoint" and entry["StartupWMClass"] == "branchpoint"
    assert entry["Categories"] == "Development;" and "application/json" in entry["MimeType"]
    assert icons[0].read_bytes() == (REPO / "gui" / "icon.svg").read_bytes()
    assert [png_size(path) for path in icons[1:]] == [(n, n) for n in PNG_SIZES]
    assert_validates(launcher)

    done = run_gui_script(["--gui-uninstall-desktop"], home)
    assert done.returncode == 0, done.stderr
    assert files_under(home) == [] and not (hicolor / "48x48").exists()
    assert str(launcher) in done.stdout


def test_xdg_data_home_is_honoured_and_other_files_are_left_alone(tmp_path):
    home, data = tmp_path / "home", tmp_path / "data"
    theirs = data / "icons" / "hicolor" / "48x48" / "apps" / "other.png"
    theirs.parent.mkdir(parents=True)
    theirs.write_bytes(b"not ours")
    assert run_gui_script(["--gui-install-desktop"], home, {"XDG_DATA_HOME": str(data)}).returncode == 0
    assert (data / "applications" / "branchpoint.desktop").is_file()
    assert run_gui_script(["--gui-uninstall-desktop"], home, {"XDG_DATA_HOME": str(data)}).returncode == 0
    assert files_under(data) == [theirs] and files_under(home) == []


def test_exec_arguments_with_spaces_and_quotes_are_quoted(tmp_path):
    assert exec_argument('/opt/my apps/"x"$') == r'"/opt/my apps/\\"x\\"\\$"'
    assert exec_argument("/a/50%") == "/a/50%%"
    odd = tmp_path / "odd" / "my python"
    odd.parent.mkdir()
    entry = odd.with_name("odd.desktop")
    entry.write_text(desktop_entry(odd), encoding="utf-8")
    assert desktop_keys(entry)["Exec"] == f'"{odd}" {MAIN} %f'
    assert_validates(entry)


def test_a_saved_run_as_the_only_argument_opens_in_the_window(tmp_path):
    """`branchpoint RUN.json` (a file manager's "Open with"): the window shows the run; with no model prepared
    it prepares none."""
    from runfiles import run_file
    from tests.app_process import open_and_look
    from tests.decoding.test_jsonio import fake_trace

    trace = fake_trace()
    path = run_file.save(trace, tmp_path / "my run.json")
    seen = open_and_look([str(path)], env={"BRANCHPOINT_CACHE_DIR": str(tmp_path / "cache"),
                                           "BRANCHPOINT_CONFIG_DIR": str(tmp_path / "config")})
    assert seen["returned"] == 0
    assert seen["lanes"] == [lane.name for lane in trace.lanes] and seen["prompt"] == trace.prompt.text
