"""A long prompt in the window: while it is read in chunks, the status bar and every lane waiting for it say how
far it got ("reading the prompt: 300 / 420 tokens"); Stop during the read ends the run at the next chunk."""

from __future__ import annotations

import time

from tests.gui_helpers import run_and_wait, wait_idle

PROMPT = " ".join(["once upon a time there was a tiny model"] * 20)  # ~400 tokens: several chunks


def _long_prompt(window, chunk: int) -> int:
    holder = window.controller.holder
    holder.get().decoder.chunk = chunk  # the real decoder, read in small chunks so a short test sees several
    window.prompt.editor.setPlainText(PROMPT)
    return len(holder.tokenizer().encode(PROMPT))


def test_the_window_shows_the_prompt_being_read_then_the_steps(qtbot, window):
    total = _long_prompt(window, chunk=64)
    seen_status, seen_headers, progress = [], [], []

    def on_prefill(done, total_):
        progress.append((done, total_))
        seen_status.append(window.status.step.text())
        seen_headers.append([column.summary.text() for column in window.text.columns])

    window.state.events.connect("prefill_progress", on_prefill)
    run_and_wait(qtbot, window, max_new_tokens=4)
    reads = [p for p in progress if p[1]]
    assert reads[0] == (0, total) and reads[-1] == (total, total) and len(reads) >= total // 64 + 1
    assert [done for done, _ in reads] == sorted(done for done, _ in reads)
    assert progress[-1] == (0, 0)  # the read ended with the first step
    assert seen_status[1] == f"reading the prompt: 64 / {total:,} tokens"
    assert all(text == f"reading the prompt: 64 / {total:,} tokens" for text in seen_headers[1])
    assert window.status.step.text().startswith("step ") and window.state.prefill is None
    assert all(len(lane.trace.steps) == 4 for lane in window.state.lanes if not lane.spec.is_beam)
    assert all("reading the prompt" not in column.summary.text() for column in window.text.columns)


def test_stop_while_the_prompt_is_read_ends_the_run_within_a_chunk(qtbot, window, monkeypatch):
    _long_prompt(window, chunk=16)
    decoder = window.controller.holder.get().decoder
    run_once = decoder._run

    def slow_chunk(*args, **kwargs):  # a chunk of a big model: the GUI hears of it long before the next one
        time.sleep(0.05)
        return run_once(*args, **kwargs)

    monkeypatch.setattr(decoder, "_run", slow_chunk)
    reads = []

    def stop_after_two_chunks(done, total):
        reads.append(done)
        if len(reads) == 3:
            window.window_actions["stop"].trigger()  # Esc

    window.state.events.connect("prefill_progress", stop_after_two_chunks)
    window.prompt.max_new_tokens.setValue(4)
    window.commands.run()
    wait_idle(qtbot, window)
    assert all(not lane.trace.steps for lane in window.state.lanes)  # stopped before any step
    assert [lane.trace.finish_reason for lane in window.state.lanes] == ["cancelled"] * len(window.state.lanes)
    assert window.state.notice is None or window.state.notice.level == "info"
    assert 3 <= len(reads) <= 5  # Stop after the second chunk: the chunk being read, at most one more
