"""runfiles.autosave and jsonio's atomic writes: a process killed (SIGKILL) at any moment while it autosaves
leaves a complete run the next start finds and restores; a full disk or an unwritable folder leaves the
previous file untouched and says why; a second instance never takes a live instance's autosave, and of two
instances restoring the same orphan only one gets it. (The window's offer to restore is the lead's.)"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from decoding.chain.spec import default_lanes
from decoding.engine.engine import Engine
from decoding.records import jsonio
from decoding.records.trace import PromptInfo
from runfiles import atomic_write, run_file
from runfiles.autosave import Autosave, orphans, restore
from tests.fake_source import FakeSource, FakeTokenizer

REPO = Path(__file__).resolve().parents[2]


def a_run(tokens: int = 6, seed: int = 0):
    engine = Engine(FakeSource(vocab_size=64), FakeTokenizer(), [])
    return engine.run(PromptInfo("p", [1, 2, 3]), default_lanes(), max_new_tokens=tokens, base_seed=seed)


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_an_autosave_reads_back_and_is_discarded_on_a_clean_exit(tmp_path):
    trace = a_run()
    saver = Autosave(tmp_path / "autosave")
    path = saver.write(trace)
    assert path.name == f"autosave-{os.getpid()}.json"
    assert jsonio.dumps(restore(path)) == jsonio.dumps(trace)
    assert orphans(tmp_path / "autosave") == []  # this process's own: not an orphan
    saver.discard()
    assert list((tmp_path / "autosave").iterdir()) == []


def test_only_the_autosaves_of_ended_processes_are_offered(tmp_path):
    Autosave(tmp_path).write(a_run())  # this process
    Autosave(tmp_path, pid=os.getppid()).write(a_run())  # a live process (pytest's parent)
    gone = Autosave(tmp_path, pid=dead_pid())
    gone.write(a_run(seed=1))
    assert orphans(tmp_path) == [gone.path]


def test_of_two_instances_restoring_one_orphan_only_one_gets_it(tmp_path):
    orphan = Autosave(tmp_path, pid=dead_pid()).write(a_run())
    first, second = Autosave(tmp_path, pid=os.getpid()), Autosave(tmp_path, pid=os.getppid())
    assert first.claim(orphan) == first.path and second.claim(orphan) is None
    assert restore(first.path).lanes and orphans(tmp_path) == []


WRITER = """
import sys
from decoding.records import jsonio
from runfiles.autosave import Autosave
from tests.reliability.test_autosave import a_run
saver = Autosave(sys.argv[1])
traces = [a_run(tokens=40, seed=seed) for seed in range(4)]
texts = {id(trace): jsonio.dumps(trace) for trace in traces}
jsonio.dumps = lambda trace: texts[id(trace)]  # serialised once: the loop's time is spent writing the file
saver.write(traces[0])
print("ready", flush=True)
index = 1
while True:  # Autosave.write, back to back
    saver.write(traces[index % 4])
    index += 1
"""

KILLED_WHILE_WRITING = """
import os, resource, signal, sys
from runfiles.autosave import Autosave
from tests.reliability.test_autosave import a_run
saver = Autosave(sys.argv[1])
saver.write(a_run(seed=0))
if sys.argv[2] == "before the rename":  # the new run is on disk, not yet renamed
    os.replace = lambda *_: os.kill(os.getpid(), signal.SIGKILL)
else:  # half way through writing the new run: no file may grow past the first one's size, and crossing it kills
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # (Python ignores it and raises EFBIG instead)
    resource.setrlimit(resource.RLIMIT_FSIZE, (saver.path.stat().st_size + 4096, resource.RLIM_INFINITY))
saver.write(a_run(tokens=24, seed=1))  # larger than the first
"""


@pytest.mark.skipif(os.name == "nt", reason="signals")
@pytest.mark.parametrize(("moment", "signal_number"), [("before the rename", signal.SIGKILL),
                                                       ("while writing", getattr(signal, "SIGXFSZ", 0))])
def test_a_kill_in_the_middle_of_an_autosave_leaves_the_previous_run_and_the_next_start_removes_the_rest(
        tmp_path, moment, signal_number):
    folder = tmp_path / "autosave"
    writer = subprocess.run([sys.executable, "-c", KILLED_WHILE_WRITING, str(folder), moment], cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True)
    assert writer.returncode == -signal_number, writer.stderr
    left = sorted(path.name for path in folder.iterdir())
    assert len(left) == 2 and left[0].endswith(".tmp"), left  # the kill left the new run's temp file
    (found,) = orphans(folder)  # the next start
    assert [lane.token_ids for lane in restore(found).lanes] == [lane.token_ids for lane in a_run(seed=0).lanes]
    assert [path.name for path in folder.iterdir()] == [found.name]


@pytest.mark.slow
@pytest.mark.skipif(os.name == "nt", reason="SIGKILL")
def test_a_process_killed_while_it_autosaves_leaves_a_complete_run(tmp_path):
    expected = [[lane.token_ids for lane in a_run(tokens=40, seed=seed).lanes] for seed in range(4)]
    cut_short = 0
    for attempt in range(6):
        folder = tmp_path / f"attempt-{attempt}"
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(folder)], cwd=REPO, stdout=subprocess.PIPE,
                                  env={**os.environ, "PYTHONPATH": str(REPO)})
        assert writer.stdout.readline().strip() == b"ready"
        time.sleep(0.05 + 0.07 * attempt)  # somewhere in the middle of one of the writes
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
        cut_short += any(path.name.endswith(".tmp") for path in folder.iterdir())
        (found,) = orphans(folder)  # the next start: one autosave to offer; a half-written temp file is gone
        assert [lane.token_ids for lane in restore(found).lanes] in expected  # a whole run, as written
        assert [p.name for p in folder.iterdir()] == [found.name]
    assert cut_short >= 1  # at least one kill came in the middle of a write


@pytest.mark.parametrize("failing", ["write", "fsync"])
def test_a_full_disk_leaves_the_previous_autosave_and_says_why(tmp_path, monkeypatch, failing):
    saver = Autosave(tmp_path)
    saver.write(a_run(seed=1))
    before = saver.path.read_bytes()

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if failing == "fsync":
        monkeypatch.setattr(atomic_write.os, "fsync", full)
    else:
        monkeypatch.setattr(jsonio, "dumps", lambda trace: "x" * 10)
        monkeypatch.setattr(atomic_write.os, "fdopen", lambda *a, **k: _FullFile())
    with pytest.raises(OSError, match="No space left on device"):
        saver.write(a_run(seed=2))
    assert saver.path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [saver.path.name]  # no temp file left


class _FullFile:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def write(self, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_save_into_an_unwritable_place_says_where_and_keeps_the_old_file(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(OSError) as autosaving:
        Autosave(blocker / "autosave").write(a_run())
    with pytest.raises(OSError) as saving:
        run_file.save(a_run(), blocker / "run.json")
    for error in (autosaving.value, saving.value):  # the message the window shows names the place
        assert str(blocker) in str(error) and error.strerror in str(error), error
    assert blocker.read_text() == "not a folder"
