"""The window's Qt-free core: the RunState's events as a view sees them and the RunController's commands, on a
pure-numpy source with a runner that runs jobs synchronously (no Qt, no threads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from decoding.chain.spec import LaneSpec
from decoding.engine.engine import Engine
from decoding.records.trace import ModelInfo, PromptInfo
from gui.state.controller import RunController
from gui.state.requests import RunRequest
from gui.state.run_state import EVENTS, RunState, Selection
from gui.state.tasks.run import RunTask
from runfiles import run_file
from tests.fake_source import FakeSource, FakeTokenizer


class FakeModel:
    """What a job needs of an opened model."""

    info = ModelInfo("fake")
    provider = "CPUExecutionProvider"

    def encode_prompt(self, text: str, chat: bool = False, system: str | None = None) -> PromptInfo:
        return PromptInfo(text, self.encode(text), chat=chat, system=system)

    def encode(self, text: str) -> list[int]:
        return [1 + len(word) for word in text.split()]

    def encode_chat(self, text: str, system: str | None = None) -> list[int]:
        return self.encode(text)


class FakeHolder:
    name = "fake"
    path = Path("fake")

    def __init__(self) -> None:
        self.source = FakeSource(vocab_size=64)
        self._engine = Engine(self.source, FakeTokenizer(), eos_token_ids=[])
        self.loaded = None
        self.positions: int | None = None

    def get(self) -> FakeModel:
        self.loaded = FakeModel()
        self.loaded.decoder, self.loaded.tokenizer = self.source, FakeTokenizer()
        return self.loaded

    def engine(self) -> Engine:
        return self._engine

    def tokenizer(self) -> FakeModel:  # what the window counts a prompt with before any model work
        return FakeModel()

    def encode_prompt(self, request: RunRequest) -> PromptInfo:  # the window's one encoding, before model work
        return self.tokenizer().encode_prompt(request.text, request.chat, request.system)

    def max_positions(self) -> int | None:
        return self.positions


class SyncRunner:
    """Runs a job at once on this thread and reports to the controller, as the window's worker does."""

    def __init__(self) -> None:
        self.controller: RunController | None = None
        self.cancel_after: int | None = None  # cancel once this many messages were streamed

    def start(self, job) -> None:
        streamed = []

        def emit(message) -> None:
            streamed.append(message)
            self.controller.on_message(message)

        def cancelled() -> bool:
            return self.cancel_after is not None and len(streamed) >= self.cancel_after

        try:
            result = job(emit, cancelled)
        except Exception as error:  # noqa: BLE001 - reported like the worker does
            self.controller.on_failed(str(error))
        else:
            self.controller.on_finished(result)

    def cancel(self) -> None:
        self.cancel_after = 0

    def is_running(self) -> bool:
        return False


class RecordingView:
    """A view that subscribes to every event and records them in order."""

    def __init__(self, state: RunState) -> None:
        self.events: list[tuple] = []
        for name in EVENTS:
            state.events.connect(name, lambda *args, name=name: self.events.append((name, *args)))

    def names(self) -> list[str]:
        return [event[0] for event in self.events]


LANES = [LaneSpec("greedy"), LaneSpec("top-k 5", do_sample=True, top_k=5), LaneSpec("beam-2", num_beams=2)]


def make(specs=LANES) -> tuple[RunState, RunController, RecordingView]:
    model = RunState(specs)
    runner = SyncRunner()
    controller = RunController(model, runner)
    runner.controller = controller
    controller.holder = FakeHolder()
    return model, controller, RecordingView(model)


def request(text: str = "one two three", tokens: int = 6, seed: int | None = 3) -> RunRequest:
    return RunRequest(text, False, None, tokens, seed)


def test_a_view_gets_every_event_of_a_streamed_run_in_order():
    model, controller, view = make()
    assert controller.run(request())
    names = view.names()
    assert names[:2] == ["lanes_reset", "run_started"] and view.events[1][1] is RunTask.kind
    steps = [event for event in view.events if event[0] == "step_added"]
    assert names.index("run_finished") > max(i for i, name in enumerate(names) if name == "step_added")
    # every record the model holds arrived as an event for its lane, in step order per lane (a beam lane may
    # re-send a step when its best path changes: the later event replaces the earlier)
    for index, lane in enumerate(model.lanes):
        mine = [record for name, i, record in steps if i == index]
        assert [r.step for r in mine] == sorted(r.step for r in mine) or lane.spec.is_beam
        assert len(lane.trace.steps) == 6 and len(mine) >= 6
    assert names[-2:] == ["run_finished", "status"] and view.events[-1][1] == "done"
    assert model.trace is not None and model.trace.analysis is not None and not model.running


def test_selection_follows_lane_edits_and_a_removed_lane_clears_it():
    model, controller, view = make()
    controller.run(request())
    assert model.select(2, 3)
    model.insert_lane(0, LaneSpec("new"))
    assert model.selection == Selection(3, 3)
    model.remove_lane(3)
    assert model.selection is None and view.events[-2:] == [("selection_changed", None), ("lane_removed", 3,
                                                                                         view.events[-1][2])]
    assert not model.select(0, 99)  # nothing recorded there: the selection stays as it is


def test_branch_streams_into_a_new_lane_and_undo_removes_it():
    model, controller, view = make()
    controller.run(request())
    parent = model.lanes[0].trace
    token = next(t.id for t in parent.steps[2].top if t.id != parent.token_ids[2])
    view.events.clear()
    assert controller.branch(0, 2, token)
    assert [lane.name for lane in model.lanes] == ["greedy", "greedy ↳2", "top-k 5", "beam-2"]
    child = model.lanes[1].trace
    assert child.token_ids[:2] == parent.token_ids[:2] and child.token_ids[2] == token
    assert child.branch == {"parent": "greedy", "step": 2, "token_id": token}
    assert view.names()[:2] == ["lane_inserted", "run_started"] and "lanes_reset" not in view.names()
    assert [lane.name for lane in model.shown_trace().lanes] == ["greedy", "greedy ↳2", "top-k 5", "beam-2"]
    assert controller.undo_branch()
    assert [lane.name for lane in model.lanes] == ["greedy", "top-k 5", "beam-2"]
    assert not controller.undo_branch()


def test_a_branch_of_a_branch_and_of_a_beam_lane_rerun_with_the_next_run():
    model, controller, _ = make()
    controller.run(request())
    beam = model.lanes[2].trace
    controller.branch(2, 1, next(t.id for t in beam.steps[1].top if t.id != beam.token_ids[1]))
    child = model.lanes[3].trace
    controller.branch(3, 3, next(t.id for t in child.steps[3].top if t.id != child.token_ids[3]))
    names = [lane.name for lane in model.lanes]
    assert names == ["greedy", "top-k 5", "beam-2", "beam-2 ↳1", "beam-2 ↳1 ↳3"]
    before = [lane.trace.token_ids for lane in model.lanes]
    controller.run(request())  # same prompt and seed: every branch point still holds
    assert model.notice is None
    assert [lane.trace.token_ids for lane in model.lanes] == before


def test_a_new_prompt_turns_branch_lanes_into_ordinary_lanes_and_says_which():
    model, controller, _ = make()
    controller.run(request())
    controller.branch(0, 2, 7)
    controller.run(request("a different prompt"))
    assert model.notice is not None and model.notice.level == "info"
    assert "“greedy ↳2” → “greedy (2)” (the prompt changed)" in model.notice.text
    assert model.lanes[1].spec.branch is None and model.lanes[1].trace.branch is None
    assert all(len(lane.trace.steps) == 6 for lane in model.lanes)


def test_seed_auto_stays_random_and_branching_pins_only_the_parents_seed():
    model, controller, _ = make([*LANES, LaneSpec("T 1.5", do_sample=True, temperature=1.5)])
    controller.run(request(seed=None))
    seeds = model.lanes[1].trace.config["seed"]
    assert model.lanes[1].spec.seed is None  # the run recorded a seed; the lane still says auto
    controller.run(request(seed=None))
    assert model.lanes[1].trace.config["seed"] != seeds  # fresh each run (2**31 choices)
    controller.branch(1, 2, 9)
    assert model.lanes[1].spec.seed == model.lanes[1].trace.config["seed"]  # pinned, and said so
    assert "keeps seed" in model.notice.text
    assert model.lanes[-1].name == "T 1.5" and model.lanes[-1].spec.seed is None  # the others stay auto


def test_an_empty_prompt_is_refused_and_the_notice_goes_with_its_cause():
    model, controller, _ = make()
    assert not controller.run(request("   "))
    assert model.notice.cause == "prompt"
    assert controller.run(request())
    assert model.notice is None


def test_progress_limit_is_the_longest_lane():
    model, controller, _ = make([LaneSpec("greedy"), LaneSpec("long", max_new_tokens=9)])
    controller.run(request(tokens=4))
    assert model.run_limit == 9 and model.max_steps() == 9


def test_cancel_keeps_what_streamed_and_says_stopped():
    model, controller, view = make()
    controller.runner.cancel_after = 5
    controller.run(request(tokens=50))
    assert 0 < model.max_steps() < 50
    assert {lane.trace.finish_reason for lane in model.lanes} == {"cancelled"}
    assert view.events[-1] == ("status", "stopped")


def test_save_and_open_round_trip(tmp_path):
    model, controller, _ = make()
    controller.run(request())
    path = tmp_path / "run.json"
    assert controller.save(path)
    other, other_controller, _ = make([LaneSpec("x")])
    got = other_controller.open(path)
    assert got == RunRequest("one two three", False, None, 6, 3)
    assert [lane.trace.token_ids for lane in other.lanes] == [lane.trace.token_ids for lane in model.lanes]
    assert not other_controller.open(tmp_path / "missing.json")
    assert "Could not open" in other.notice.text


@pytest.mark.parametrize("event", sorted(EVENTS))
def test_unknown_event_names_are_refused(event):
    model = RunState()
    model.events.connect(event, lambda *args: None)
    with pytest.raises(KeyError, match="no event"):
        model.events.connect(event + "_typo", lambda *args: None)


def test_replay_the_branch_not_taken_swaps_one_token_and_keeps_the_draws():
    from decoding.analysis.branch_not_taken import not_taken_spec
    from decoding.analysis.critical import runner_up

    model, controller, _ = make()
    controller.run(request(seed=None))  # auto seed: the replay must reuse the seed the lane ran with
    lane = model.lanes[1]
    step = 2
    other = runner_up(lane.trace.steps[step], model.critical)
    assert controller.replay_not_taken(1, step)
    replay = model.lanes[2]
    assert replay.name == f"top-k 5 ↳{step} runner-up" and replay.spec.replay_of.token_id == other
    assert replay.trace.token_ids[:step] == lane.trace.token_ids[:step] and replay.trace.token_ids[step] == other
    seed = lane.trace.config["seed"]
    assert replay.trace.config["seed"] == seed and lane.spec.seed == seed  # the original keeps its seed now
    # the same replay run together with its original from scratch gives the same tokens
    alone = controller.holder.engine().run(
        model.trace.prompt, [lane.spec, not_taken_spec(lane.spec, step, other, "again")], max_new_tokens=6)
    assert alone.lanes[1].token_ids == replay.trace.token_ids
    comparison = model.replay_comparison(2)
    assert comparison is not None and comparison.shared_prefix >= 0
    controller.run(request("another prompt", seed=None))
    assert model.lanes[2].spec.replay_of is None and "the prompt changed" in model.notice.text


def test_a_fanned_out_lane_runs_its_members_in_one_run_and_regroups_on_open(tmp_path):
    from dataclasses import replace

    model, controller, view = make()
    model.set_fanout(1, 4)
    controller.run(request(seed=5))
    lane = model.lanes[1]
    assert [t.name for t in lane.members] == [f"top-k 5 #{k}" for k in range(4)] and lane.trace is lane.members[0]
    seeds = [t.config["seed"] for t in lane.members]
    assert seeds == list(range(seeds[0], seeds[0] + 4))
    engine = controller.holder.engine()
    for trace, seed in zip(lane.members, seeds, strict=True):  # each member is the lane run alone with its seed
        alone = engine.run(model.trace.prompt, [replace(lane.spec, seed=seed)], max_new_tokens=6)
        assert alone.lanes[0].token_ids == trace.token_ids
    assert controller.holder.source.prefill_calls == 1 + 4  # the run prefilled once (then the four checks)
    assert "member_step_added" in view.names() and view.names().count("lanes_reset") == 1
    saved = model.shown_trace()
    assert [t.name for t in saved.lanes][1:5] == [f"top-k 5 #{k}" for k in range(4)]
    assert set(saved.analysis.fanouts) == {"top-k 5"}
    assert model.select(1, 3, member=2) and model.step_record(1, 3, 2) is lane.members[2].steps[3]
    path = tmp_path / "fan.json"
    controller.save(path)
    other, other_controller, other_view = make([LaneSpec("x")])
    other_controller.open(path)
    assert [lane.name for lane in other.lanes] == ["greedy", "top-k 5", "beam-2"]
    assert other.lanes[1].fanout == 4 and [t.token_ids for t in other.lanes[1].members] == [
        t.token_ids for t in lane.members]
    other_controller.replay()
    assert other_view.events[-1] == ("status", "replay: every token identical to the saved run")
    assert [t.token_ids for t in other.lanes[1].members] == [t.token_ids for t in lane.members]


def test_fanout_refusals_are_said_in_words():
    model, controller, _ = make()
    with pytest.raises(ValueError, match=r"invalid fanout=65: allowed an integer in \[1, 64\]"):
        model.set_fanout(1, 65)
    model.set_fanout(0, 3)  # greedy draws nothing: the run says so instead of repeating one text 3 times
    assert not controller.run(request())
    assert "greedy lane 'greedy' draws nothing" in model.notice.text


def test_a_temperature_sweep_is_computed_once_and_stored_with_the_run():
    from decoding.analysis.sweep import processed_at, sweep_inputs

    model, controller, view = make()
    controller.run(request())
    assert controller.sweep(1, 3)
    sweep = model.sweep_at(1, 3)
    assert sweep is not None and view.names()[-3:] == ["sweeps_changed", "run_finished", "status"]
    inputs = sweep_inputs(model.shown_trace(), "top-k 5", 3)
    logits = controller.holder.source.logits_for(inputs.ids)
    point = next(p for p in sweep.points if p.temperature == 0.7)
    import numpy as np

    probs = np.exp(processed_at(logits, inputs, 0.7).astype(np.float64))
    probs /= probs.sum()
    assert point.prob == pytest.approx(probs[sweep.token_id], rel=1e-5)  # the lane's processors at T 0.7
    assert model.shown_trace().sweeps == [sweep] and model.lanes[1].trace.steps  # no lane changed


def test_temperature_fanouts_share_one_seed_and_their_diversity_reads_back():
    from decoding.analysis.sweep import diversity_by_temperature

    model, controller, _ = make()
    controller.run(request(seed=None))
    assert controller.add_temperature_fanouts(1, temperatures=(0.5, 1.5), count=3)
    added = model.lanes[2:4]
    assert [lane.name for lane in added] == ["T 0.5 ×3", "T 1.5 ×3"]
    assert all(lane.fanout == 3 for lane in added)
    assert added[0].spec.seed == added[1].spec.seed is not None
    controller.run(request(seed=None))
    points = diversity_by_temperature(model.shown_trace())
    assert [p.temperature for p in points] == [0.5, 1.5] and all(p.members == 3 for p in points)


def test_replay_says_where_a_lane_differs_and_how_close_that_step_was(tmp_path):

    model, controller, _ = make()
    controller.run(request())
    path = tmp_path / "run.json"
    controller.save(path)
    saved = run_file.load(path)
    saved.lanes[0].token_ids[3] += 1  # as if another machine had tipped a near-tie there
    saved.lanes[0].steps[3].token_id += 1
    run_file.save(saved, path)
    controller.open(path)
    controller.replay()
    text = model.notice.text
    assert text.startswith("Replay differs from the saved run: lane 'greedy' at step 3: ")


def test_replacing_the_lanes_clears_a_selection_in_a_lane_that_goes():
    model, controller, view = make()
    controller.run(request())
    model.select(2, 1)
    view.events.clear()
    model.set_specs([LaneSpec("only")])
    assert view.names()[:2] == ["selection_changed", "lanes_reset"]  # views hear of the selection first
    assert model.selection is None and model.trace is None


def test_a_prompt_longer_than_the_model_is_refused_before_any_model_work():
    model, controller, _ = make()
    controller.holder.positions = 8
    assert not controller.run(request("one two three four five six seven eight nine", tokens=4))
    assert "longer than the model's 8 positions" in model.notice.text and controller.holder.loaded is None
    assert not controller.run(request("one two three", tokens=10))  # 3 + 10 new tokens do not fit either
    assert model.notice.text.startswith("Cannot run: ")
    assert controller.run(request("one two", tokens=6))
    assert model.notice is None


def test_the_windows_run_encodes_its_prompt_once_and_runs_on_those_ids(monkeypatch):
    model, controller, _ = make()
    encoded = []
    monkeypatch.setattr(FakeHolder, "encode_prompt", lambda self, r: encoded.append(r.text) or PromptInfo(
        r.text, [7, 8, 9]))  # other ids than the fake model's own encoding: the run must take these
    monkeypatch.setattr(FakeModel, "encode_prompt", lambda *args, **kwargs: pytest.fail("encoded a second time"))
    assert controller.run(request("one two three"))
    assert encoded == ["one two three"] and model.trace.prompt.ids == [7, 8, 9]


def test_a_lane_that_fails_is_named_and_the_others_go_on():
    import numpy as np

    class NanAfterTwo(FakeSource):
        def logits_for(self, history):
            row = super().logits_for(history)
            if len(history) >= 5 and history[1] == 4:  # only the greedy lane's rows, after two steps
                row[:] = np.nan
            return row

    model, controller, _ = make([LaneSpec("greedy"), LaneSpec("beam-2", num_beams=2)])
    controller.holder.source = NanAfterTwo(vocab_size=64)
    controller.holder._engine = Engine(controller.holder.source, FakeTokenizer(), eos_token_ids=[])
    controller.run(request("one two three"))
    text = model.notice.text
    failed = [lane for lane in model.lanes if lane.trace.error]
    assert failed and f"“{failed[0].name}” stopped at step" in text


def test_lanes_keep_their_colours_through_save_open_and_bring_back_fanout_members_share_theirs(tmp_path):
    """A lane's colour is its own for life (issue 23: colours were handed out by position after a restore): the
    run file records it, Open gives it back, a fan-out's members carry their lane's, bring-back keeps them."""
    from decoding.analysis import session_tree

    model, controller, _ = make([*LANES, LaneSpec("T 1.3", do_sample=True, temperature=1.3)])
    model.set_fanout(3, 3)
    controller.run(request(seed=5))
    model.remove_lane(1)
    model.move_lane(2, 0)  # "T 1.3" first: [T 1.3, greedy, beam-2]
    colours = [lane.colour for lane in model.lanes]
    assert colours == [3, 0, 2]
    path = tmp_path / "run.json"
    assert controller.save(path)
    saved = run_file.load(path)
    assert [(t.name, t.colour) for t in saved.lanes] == [
        ("T 1.3 #0", 3), ("T 1.3 #1", 3), ("T 1.3 #2", 3), ("greedy", 0), ("beam-2", 2)]
    other, other_controller, _ = make([LaneSpec("x")])
    assert other_controller.open(path)
    assert [(lane.name, lane.colour) for lane in other.lanes] == [("T 1.3", 3), ("greedy", 0), ("beam-2", 2)]
    other.insert_lane(3, LaneSpec("new"))
    assert other.lanes[3].colour == 1  # a new lane takes the lowest free colour, as before

    node = other.lane_nodes[other.lanes[2].key]  # bring beam-2 back: its lane is made again, in its colour
    assert other_controller.bring_back(node)
    assert [(lane.name, lane.colour) for lane in other.lanes] == [("beam-2", 2)]
    member = next(n for n in other.tree if n.lane == "T 1.3 #1")  # no lane shows it: the colour it recorded
    assert other_controller.bring_back(member.id)
    assert [lane.colour for lane in other.lanes] == [3] and session_tree.node_of(other.tree, member.id)


def test_a_files_colours_are_kept_where_they_are_distinct_and_the_rest_take_free_ones(tmp_path):
    """Hand-edited or merged files: a colour two lanes claim goes to the first, a lane without one (a run the
    command line wrote) takes the lowest colour no other lane has."""

    model, controller, _ = make([*LANES, LaneSpec("fourth")])
    controller.run(request())
    trace = model.shown_trace()
    for lane, colour in zip(trace.lanes, [5, None, 5, 0], strict=True):
        lane.colour = colour
    path = run_file.save(trace, tmp_path / "edited.json")
    other, other_controller, _ = make([LaneSpec("x")])
    other_controller.open(path)
    assert [lane.colour for lane in other.lanes] == [5, 1, 2, 0]
    for lane in trace.lanes:
        lane.colour = None
    run_file.save(trace, path)
    other_controller.open(path)
    assert [lane.colour for lane in other.lanes] == [0, 1, 2, 3]  # by position, as a run without colours always was
