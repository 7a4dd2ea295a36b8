"""What the window's commands do, Qt-free: run, branch (and undo it), force a token for all lanes, replay, stop,
open and save. The controller starts jobs on a runner (the window's worker thread, or a synchronous one in
tests), turns the jobs' typed messages into RunState changes, and reports problems as the model's notice.

Branch points stay valid while the tokens before them can be reproduced: the same prompt and a deterministic
parent (greedy, beam, or a sampled lane with a pinned seed). Branching from a sampled lane whose seed is
"auto" pins that lane's seed to the one it ran with (and says so); a run whose prompt changed, or whose
branch parent is gone or unpinned, turns those branch lanes into ordinary lanes of their own strategy first
(and says which).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from decoding.analysis import fanout
from decoding.analysis.branch_not_taken import not_taken_spec
from decoding.analysis.critical import runner_up
from decoding.chain.spec import PRESETS, Branch, LaneSpec, assign_seeds, specs_of, unique_name
from decoding.engine.lane_state import empty_trace
from decoding.records.explain import MAX_EXPLAIN_TOKENS, ExplainResult, explain_span, with_start_token
from decoding.records.trace import LaneTrace, RunTrace
from gui.i18n import QT_TRANSLATE_NOOP, translate
from gui.present.lane_fields import error_text
from gui.state import jobs
from gui.state.jobs import Job, Message, PrefillMessage, ProviderMessage, RunStartedMessage, StatusMessage, StepMessage
from gui.state.model_holder import ModelHolder, check_lane_models
from gui.state.requests import RunRequest, request_of
from gui.state.run_state import JobKind, Lane, Proposal, RunState, prompt_key
from runfiles import run_file

# Notices a new job makes untrue: the prompt's refusal, "restored the run…", "select a token first", step mode's
# refusals (step mode starting or stepping on).
STALE_AT_A_JOB = ("prompt", "restore", "selection", "step_mode")


class JobRunner(Protocol):
    """Runs one job at a time and calls the controller's on_message / on_finished / on_failed with its
    messages and result (on the thread that owns the model)."""

    def start(self, job: Job) -> None: ...

    def cancel(self) -> None: ...

    def is_running(self) -> bool: ...


class RunController:
    def __init__(self, state: RunState, runner: JobRunner) -> None:
        self.state = state
        self.runner = runner
        self.holder: ModelHolder | None = None
        # prepares a model's inspection model (the window: the setup dialog); returns None when it is prepared,
        # else why not (cancelled, failed). None: explaining needs it prepared beforehand (`main.py explain`).
        self.prepare_inspection: Callable[[Path], str | None] | None = None
        # runs a callable on the thread that owns the state (the window: its GUI thread; default: at once)
        self.call_soon: Callable[..., None] = lambda function, *args: function(*args)
        state.model_files = self.model_files
        self._targets: list[tuple[int, int]] = []  # (lane key, member) the job streams into, by its lane index
        self._branch_keys: list[int] = []  # branch lanes in the order they were made (Undo removes the last)
        self._replayed: RunTrace | None = None  # the run being replayed (its lanes are not touched by the replay)
        self._compared: RunTrace | None = None  # the run a "Run again and compare" compares the new one with
        # step mode's StepSession (decoding.engine.step_mode) while it is on, made by its first job
        self.stepping: list = []
        self.step_mode = False

    # ------------------------------------------------------------------------------------------------ model

    def set_model(self, path: Path) -> bool:
        """Use the prepared model in `path` from the next run on (loaded on first use)."""
        path = Path(path)
        if self.holder is not None and self.holder.path == path:
            return True
        if self.runner.is_running():
            self.state.show_notice(translate("controller", "Stop the run before switching models."))
            return False
        self.holder = ModelHolder(path, self.device)
        self.holder.on_loaded = lambda model: self.call_soon(self.on_model_loaded, model)
        self.state.set_model_name(self.holder.name, "not loaded")
        return True

    @property
    def device(self) -> str:
        """Where the model runs: "auto", "cpu" or "cuda" (the request's)."""
        return self.state.request.device

    @property
    def branch_base(self) -> LaneSpec | None:
        """The strategy new branch lanes continue with (None: their parent's)."""
        return PRESETS.get(self.state.request.branch_strategy)

    def model_files(self) -> tuple[object | None, int | None]:
        """The shown run's model's tokenizer and positions, when that model is the one chosen here."""
        holder, trace = self.holder, self.state.trace
        if holder is None or trace is None or trace.model.name != holder.name:
            return None, None
        try:
            return holder.tokenizer(), holder.max_positions()
        except (OSError, ValueError):
            return None, None

    def on_model_loaded(self, model) -> None:
        """The holder loaded its model (possibly on another thread: the window calls this on its own)."""
        if self.holder is not None and self.holder.loaded is model and self.state.provider in ("", "not loaded"):
            self.state.set_model_name(self.holder.name, model.provider)

    def set_device(self, device: str) -> bool:
        """Run the model on `device` ("auto", "cpu", "cuda") from the next run on (reloaded on first use)."""
        if device == self.device:
            return True
        if self.runner.is_running():
            self.state.show_notice(translate("controller", "Stop the run before switching devices."))
            return False
        self.state.update_request(device=device)
        if self.holder is not None:
            path, self.holder = self.holder.path, None
            self.set_model(path)
        return True

    # -------------------------------------------------------------------------------------------------- runs

    def run(self, request: RunRequest | None = None, compare: bool = False) -> bool:
        """Run every lane on the request's prompt (the state's request unless given). compare: "Run again and
        compare": when the run ends, say where each lane first differs from the run shown now, and why (a lane
        whose seed is "auto" draws anew)."""
        if self.runner.is_running():
            return False
        request = self.state.request if request is None else request
        previous = self.state.shown_trace() if compare else None
        if compare and (previous is None or not previous.lanes):
            self.state.show_notice(translate("controller", "Run again and compare needs a run to compare with (run "
                                                           "or open one)."))
            return False
        if not self.check_run(request):
            return False
        said = [words for words in (self._settle_picks(request), self._settle_branches(request)) if words]
        if said:
            self.state.show_notice(" ".join(said), level="info", cause="branches")
        try:
            targets = self._expand(self.state.lanes, request.seed)
            specs = list(targets.values())
            jobs.run_order(specs)
            check_lane_models(specs, self.holder.name)
        except ValueError as error:
            self.state.show_notice(translate("controller", "Cannot run: {error}.").format(error=error_text(error)))
            return False
        self._start(JobKind.RUN, targets, jobs.run_job(self.holder, request, specs), _run_limit(specs, request))
        self._compared = replace(previous, lanes=list(previous.lanes)) if previous is not None else None
        return True

    @staticmethod
    def _expand(lanes: list[Lane], base_seed: int | None) -> dict[tuple[int, int], LaneSpec]:
        """What each lane runs, by (lane key, member): itself, or its fan-out's members (seeds seed, seed+1, …
        from one seed drawn now, recorded in the run)."""
        targets: dict[tuple[int, int], LaneSpec] = {}
        for lane in lanes:
            members = fanout.fan_out(lane.spec, lane.fanout, base_seed) if lane.fanout > 1 else [lane.spec]
            targets.update({(lane.key, k): spec for k, spec in enumerate(members)})
        return targets

    def check_run(self, request: RunRequest | None = None) -> bool:
        """The refusals a run meets before any work (no model, an empty prompt, a prompt past the model's
        positions), said in a notice; True when none applies. The window asks "Save changes?" only after them."""
        request = self.state.request if request is None else request
        return self._check_can_run(request) and self._check_length(request)

    def _settle_picks(self, request: RunRequest) -> str:
        """Hand-picked tokens (step mode, Force for all lanes) belong to the prompt they were picked for: a run of
        another prompt runs those lanes without them. What to say of it ("" when nothing changed)."""
        dropped = self.state.drop_picks((request.text, request.chat, request.system))
        if not dropped:
            return ""
        notice = translate("controller", "The prompt changed: these lanes run without the tokens picked by hand (and "
                                         "the length step mode stopped at) for the last prompt: {lanes}.")
        return notice.format(lanes=", ".join(f"“{name}”" for name in dropped))

    def _check_can_run(self, request: RunRequest) -> bool:
        if self.holder is None:
            self.state.show_notice(translate("controller", "No model: choose or prepare one in the Model list first."))
            return False
        if not request.text.strip():
            self.state.show_notice(translate("controller", "The prompt is empty: type something for the lanes to "
                                                           "continue."),
                                   cause="prompt")
            return False
        return True

    def _check_length(self, request: RunRequest) -> bool:
        """Refuse a prompt (and max new tokens) past the model's positions before any model work: its tokenizer
        alone counts the prompt (read from the model's folder in milliseconds)."""
        from decoding.engine.engine import check_positions

        try:
            tokenizer = self.holder.tokenizer()
            ids = (tokenizer.encode_chat(request.text, system=request.system) if request.chat
                   else tokenizer.encode(request.text))
            limit = max((lane.spec.max_new_tokens or request.max_new_tokens for lane in self.state.lanes),
                        default=request.max_new_tokens)
            check_positions(len(ids), limit, self.holder.max_positions())
        except ValueError as error:
            self.state.show_notice(translate("controller", "Cannot run: {error}.").format(error=error), cause="prompt")
            return False
        except OSError:  # no tokenizer to read: the run's own load reports what is wrong
            return True
        return True

    def _settle_branches(self, request: RunRequest) -> str:
        """Turn branch lanes whose branch point no longer holds into ordinary lanes; what to say of it ("" when
        none)."""
        key = (request.text, request.chat, request.system)
        by_name = {lane.name: lane for lane in self.state.lanes}
        turned = []
        for index, lane in enumerate(self.state.lanes):
            branch = lane.spec.branch
            if branch is not None:
                reason = _broken_branch_reason(lane, by_name.get(branch.parent), key)
                if not reason and by_name[branch.parent].fanout > 1:
                    reason = translate("controller", "its parent “{parent}” fans out now").format(
                        parent=branch.parent)
            elif lane.spec.replay_of is not None:  # a replay reproduces its own prefix: only the prompt matters
                changed = lane.branch_prompt not in (None, key)
                reason = translate("controller", "the prompt changed") if changed else ""
            else:
                continue
            if reason:
                old_name = lane.name
                self.state.detach_branch(index)  # named by its strategy from now on when its name was the branch's
                renamed = "" if lane.name == old_name else f" → “{lane.name}”"
                turned.append(f"“{old_name}”{renamed} ({reason})")
        if not turned:
            return ""
        notice = translate("controller", "These branch lanes now run as ordinary lanes of their own strategy: "
                                         "{lanes}.")
        return notice.format(lanes="; ".join(turned))

    def stop(self) -> None:
        if self.runner.is_running():
            self.state.set_status(translate("controller", "stopping at the next step…"))
            self.runner.cancel()

    # --------------------------------------------------------------------------------------------- branching

    def branch(self, index: int, step: int, token_id: int) -> bool:
        """A new lane after lane `index` that takes `token_id` at `step` and continues from there (with the
        branch strategy, or the parent's); it runs at once from the parent's first `step` tokens. In step mode,
        a candidate of a lane's proposed step is taken instead of the lane's pick."""
        if self.step_mode:
            return self.step_take(index, step, token_id)
        state = self.state
        if self.runner.is_running() or state.trace is None or self.holder is None:
            state.show_notice(translate("controller", "Branching needs a finished run and a model."))
            return False
        if state.step_record(index, step) is None:
            return False
        parent = state.lanes[index]
        if parent.fanout > 1:
            state.show_notice(translate("controller", "“{name}” runs as a fan-out: set its fan-out to 1 to branch from "
                                                      "it.").format(name=parent.name),
                              level="info")
            return False
        spec = self._branch_spec(parent, step, token_id)
        if parent.trace.prompt_ids is not None and spec.model != parent.spec.model:
            state.show_notice(translate("controller", "“{name}” ran on a model of another tokenizer: a branch from it "
                                                      "continues its tokens on its model ({model}); set the branch "
                                                      "strategy's model to it.").format(
                                  name=parent.name, model=parent.trace.model.name), level="info")
            return False
        self._pin_parent_seed(index)
        position = index + 1
        while position < len(state.lanes) and _branches_from(state.lanes[position], parent.name):
            position += 1
        lane = state.insert_lane(position, spec, branch_prompt=prompt_key(state.trace))
        self._branch_keys.append(lane.key)
        job = jobs.branch_job(self.holder, state.shown_trace(), spec)
        self._start(JobKind.BRANCH, {(lane.key, 0): spec}, job, state.trace.settings.max_new_tokens)
        return True

    def _branch_spec(self, parent: Lane, step: int, token_id: int) -> LaneSpec:
        base = self.branch_base if self.branch_base is not None else parent.spec
        name = unique_name(f"{parent.name} ↳{step}", self.state.names())
        return replace(base, name=name, branch=Branch(parent.name, step, token_id), forced={})

    def _pin_parent_seed(self, index: int) -> None:
        """A sampled parent with seed auto gets the seed it ran with, so its branch can be re-run."""
        lane = self.state.lanes[index]
        seed = lane.trace.config.get("seed")
        if lane.spec.do_sample and lane.spec.seed is None and seed is not None:
            self.state.pin_seed(index, int(seed))
            self.state.show_notice(
                translate("controller", "“{name}” now keeps seed {seed} so its branch can be re-run; set its seed back "
                                        "to auto for fresh samples (its branch lanes then run as ordinary lanes).")
                                        .format(name=lane.name, seed=seed), level="info", cause="seed")

    def replay_not_taken(self, index: int, step: int) -> bool:
        """From a step of lane `index` (a critical point, typically): a new lane after it that takes the
        runner-up there and continues with the same spec and the same draws, run at once; its column then says
        how far the two continuations end up apart."""
        state = self.state
        record = state.step_record(index, step)
        if self.runner.is_running() or state.trace is None or self.holder is None or record is None:
            state.show_notice(translate("controller",
                                        "Replaying the branch not taken needs a finished run and a model."))
            return False
        runner_up_token = runner_up(record, state.critical)
        if runner_up_token is None:
            state.show_notice(translate("controller", "This step has no runner-up to replay (a single candidate)."),
                              level="info")
            return False
        lane = state.lanes[index]
        if lane.fanout > 1:
            state.show_notice(translate("controller", "“{name}” runs as a fan-out: set its fan-out to 1 to replay a "
                                                      "step of it.").format(name=lane.name),
                              level="info")
            return False
        try:
            self._pin_parent_seed(index)
            # the replay continues this lane's own tokens: a branch lane's branch marker is not the replay's
            name = translate("controller", "{lane} ↳{step} runner-up").format(lane=lane.name, step=step)
            spec = not_taken_spec(replace(self._ran_spec(lane), branch=None), step, runner_up_token,
                                  unique_name(name, state.names()))
        except ValueError as error:
            state.show_notice(translate("controller",
                                        "Cannot replay the branch not taken: {error}.").format(error=error))
            return False
        new = state.insert_lane(index + 1, spec, branch_prompt=prompt_key(state.trace), named_by_user=True)
        self._branch_keys.append(new.key)
        job = jobs.replay_not_taken_job(self.holder, state.shown_trace(), spec)
        self._start(JobKind.BRANCH, {(new.key, 0): spec}, job, state.trace.settings.max_new_tokens)
        return True

    def _ran_spec(self, lane: Lane) -> LaneSpec:
        """The lane's spec with the seed it ran with (auto seeds are recorded in the run)."""
        seed = lane.trace.config.get("seed")
        return replace(lane.spec, seed=seed) if lane.spec.do_sample and seed is not None else lane.spec

    def sweep(self, index: int, step: int) -> bool:
        """How lane `index`'s distribution at `step` changes with temperature (0 to 2), through its own
        processors: the model recomputes that step's logits once; the sweep is stored with the run."""
        state = self.state
        if self.runner.is_running() or state.trace is None or self.holder is None:
            state.show_notice(translate("controller", "A temperature sweep needs a finished run and a model."),
                              cause="sweep")
            return False
        lane = state.lanes[index]
        if lane.members:
            state.show_notice(translate("controller",
                                        "“{name}” runs as a fan-out: sweep a step of a lane without one.")
                                        .format(name=lane.name), level="info", cause="sweep")
            return False
        try:
            job = jobs.sweep_job(self.holder, state.shown_trace(), lane.name, step)
        except ValueError as error:
            state.show_notice(translate("controller", "Cannot sweep: {error}.").format(error=error), cause="sweep")
            return False
        self._start(JobKind.SWEEP, {}, job, state.run_limit)
        return True

    def add_temperature_fanouts(self, index: int, temperatures=(0.3, 0.7, 1.0, 1.5), count: int = 8) -> bool:
        """Lanes that run lane `index` as fan-outs of `count` seeds at each temperature (the same seeds at every
        temperature): after the next run, how diversity grows with temperature."""
        state = self.state
        lane = state.lanes[index]
        if self.runner.is_running() or fanout.refusal(lane.spec):
            state.show_notice(translate("controller",
                                        "Temperature fan-outs need a sampled lane: {refusal}.")
                                        .format(refusal=fanout.refusal(lane.spec)), level="info")
            return False
        seed = lane.trace.config.get("seed") if lane.spec.seed is None else lane.spec.seed
        (base,) = assign_seeds([replace(lane.spec, seed=seed, fanout=None)], None)  # one seed for every temperature
        for offset, temperature in enumerate(temperatures, start=1):
            name = unique_name(f"T {temperature:g} ×{count}", state.names())
            state.insert_lane(index + offset, replace(base, name=name, temperature=temperature), fanout=count,
                              named_by_user=True)
        state.set_status(translate("controller",
                                   "added {len} temperature fan-outs of “{name}”: Run to compare them")
                                   .format(len=len(temperatures), name=lane.name))
        return True

    def undo_branch(self) -> bool:
        """Remove the most recent branch lane that still exists."""
        if self.runner.is_running():
            return False
        while self._branch_keys:
            key = self._branch_keys.pop()
            try:
                index = self.state.index_of(key)
            except KeyError:
                continue
            removed = self.state.remove_lane(index)
            self.state.remove_leaf_of(removed.key)
            self.state.set_status(translate("controller", "removed branch lane “{name}”").format(name=removed.name))
            return True
        self.state.set_status(translate("controller", "no branch lane to undo"))
        return False

    def force_for_all(self, step: int, token_id: int, request: RunRequest | None = None) -> bool:
        """Re-run every lane with `token_id` forced at `step` (each keeps its own tokens before it)."""
        if self.runner.is_running() or self.holder is None:
            return False
        request = self.state.request if request is None else request
        prompt = (request.text, request.chat, request.system)
        for index, lane in enumerate(self.state.lanes):
            self.state.note_picks(index, prompt)
            self.state.replace_spec(index, replace(lane.spec, forced={**lane.spec.forced, step: token_id}))
        return self.run(request)

    # --------------------------------------------------------------------------------------------- explain

    def explain_lane(self, index: int) -> bool:
        """What lane `index` does inside the model: its sequence (the prompt, then its tokens; the first
        MAX_EXPLAIN_TOKENS when longer, said in a notice) through the model's inspection model, prepared first
        when needed. The result is stored with the run; one already stored is shown without the state."""
        state = self.state
        lane = state.lanes[index] if 0 <= index < len(state.lanes) and state.trace is not None else None
        if self.runner.is_running() or lane is None or not lane.trace.token_ids:
            state.show_notice(translate("controller", "Explaining needs a lane of a finished run: run or open one, "
                                                      "then pick a lane."),
                              level="info")
            return False
        if lane.trace.model is not None:  # the inspection model is the run model's export
            text = translate("controller", "“{name}” ran on {model}: Explain looks inside the run's model only "
                                           "({run}).")
            state.show_notice(text.format(name=lane.name, model=lane.trace.model.name, run=state.trace.model.name),
                              level="info")
            return False
        stored = state.explanation(index)
        sequence = len(state.trace.prompt.ids) + len(lane.trace.token_ids)
        if stored is not None and len(stored.tokens) == min(sequence, MAX_EXPLAIN_TOKENS):
            state.set_status(translate("controller",
                                       "“{name}” is explained: see the Attention and Logit lens tabs")
                                       .format(name=lane.name))
            return True  # no model needed
        if self.holder is None:
            state.show_notice(translate("controller", "Explaining “{name}” needs the model it was made with: choose it "
                                                      "in the Model list.").format(name=lane.name))
            return False
        if not self._use_model_of(state.trace):
            return False
        prompt = list(state.trace.prompt.ids)
        if not state.trace.prompt.chat:  # a plain prompt's first word would be the attention sink: see the view
            prompt = with_start_token(prompt, self.holder.start_token_id())
        try:
            ids = explain_span(prompt, lane.trace.token_ids, self.holder.max_positions())
        except ValueError as error:
            state.show_notice(translate("controller",
                                        "Cannot explain “{name}”: the prompt: {error}.").format(name=lane.name,
                                                                                                error=error))
            return False
        if stored is not None and stored.token_ids == ids:  # as far as this model's positions go
            state.set_status(translate("controller",
                                       "“{name}” is explained: see the Attention and Logit lens tabs")
                                       .format(name=lane.name))
            return True
        if not self._inspection_ready(lane.name):
            return False
        if len(ids) < sequence:
            state.show_notice(
                translate("controller", "Explaining the first {len} of “{name}”'s {sequence} tokens (prompt included): "
                                        "explain takes at most {len2}, as attention weights grow as tokens squared.")
                                        .format(len=len(ids), name=lane.name, sequence=sequence,
                                                len2=len(ids)), level="info",
                cause="explain")
        self._start(JobKind.EXPLAIN, {}, jobs.explain_job(self.holder, ids, len(prompt)), state.run_limit)
        return True

    def _inspection_ready(self, lane: str) -> bool:
        """The model's inspection model is prepared, or gets prepared now (a notice says why not)."""
        from models.inspection import inspection_is_prepared, source_weights

        if inspection_is_prepared(self.holder.path):
            return True
        try:
            source_weights(Path(self.holder.path).resolve())
        except FileNotFoundError as error:
            self.state.show_notice(translate("controller", "“{lane}” cannot be explained: its inspection model is "
                                                           "built from the float32 weights the model was exported "
                                                           "from, and {error}. Prepare the model from its GGUF (the "
                                                           "default model) or from a local Hugging Face folder.")
                                                           .format(lane=lane, error=error))
            return False
        if self.prepare_inspection is None:
            why = "its inspection model is not prepared (python main.py explain prepares it)"
        else:
            why = self.prepare_inspection(self.holder.path)
        if why is None:
            return True
        self.state.show_notice(translate("controller", "“{lane}” was not explained: {why}.").format(lane=lane, why=why))
        return False

    # ------------------------------------------------------------------------------------- model comparison

    def compare_with_model(self, index: int, other: str | Path) -> bool:
        """Lane `index`'s tokens read by a second prepared model (`other`: a name or folder) and by the run's own,
        teacher-forced: per-step KL, top-1 agreement, change in p(chosen), shown in the Model comparison view.
        Refused with a notice (nothing changes) without a finished lane, a prepared model or the same tokenizer."""
        state = self.state
        lane = state.lanes[index] if 0 <= index < len(state.lanes) and state.trace is not None else None
        if self.runner.is_running() or lane is None or not lane.trace.token_ids or self.holder is None:
            state.show_notice(translate("controller", "Comparing with another model needs a lane of a finished run "
                                                      "and its model: run, then pick a lane."), level="info")
            return False
        if lane.members:
            state.show_notice(translate("controller", "“{name}” runs as a fan-out: compare a lane without one.")
                              .format(name=lane.name), level="info")
            return False
        if lane.trace.prompt_ids is not None:
            text = translate("controller", "“{name}” ran on a model of another tokenizer: the teacher-forced "
                                           "comparison reads a lane's tokens with the run's model, token by token.")
            state.show_notice(text.format(name=lane.name), level="info")
            return False
        path = self._comparable_model(other)
        if path is None or not self._use_model_of(state.trace):
            return False
        if path.resolve() == self.holder.path.resolve():
            state.show_notice(translate("controller", "{model} is the run's own model: pick another one to compare "
                                                      "with.").format(model=self.holder.name), level="info")
            return False
        if not self._same_vocabulary(path):
            return False
        job = jobs.model_compare_job(self.holder, path, state.shown_trace(), lane.key, lane.name)
        self._start(JobKind.MODEL_COMPARE, {}, job, state.run_limit)
        return True

    def _comparable_model(self, other: str | Path) -> Path | None:
        """The prepared model's folder, or None with a notice when it is not prepared (or not intact)."""
        from models.catalog import files_intact, read_manifest, resolve

        try:
            path = resolve(other)
        except FileNotFoundError:
            path = None
        if path is None or not files_intact(path, read_manifest(path)):
            self.state.show_notice(translate("controller", "Cannot compare with {model}: it is not prepared here "
                                                           "(python main.py prepare --variant …, or Add local folder "
                                                           "in the Model list).").format(model=other))
            return None
        return path

    def _same_vocabulary(self, other: Path) -> bool:
        from gui.state.model_comparison import vocabulary_sizes

        try:
            sizes = vocabulary_sizes(self.holder.path, other)
        except (OSError, ValueError) as error:
            sizes, why = None, str(error)
        else:
            why = ("" if sizes is None else
                   translate("controller", "its vocabulary differs ({a} vs {b} tokens)").format(a=sizes[0], b=sizes[1])
                   if sizes[0] != sizes[1] else
                   translate("controller", "its vocabulary has other tokens ({a} each)").format(a=sizes[0]))
        if why:
            self.state.show_notice(translate("controller", "Cannot compare {model} with {other} token by token: {why}. "
                                                           "A teacher-forced comparison needs the same tokenizer.")
                                   .format(model=self.holder.name, other=other.name, why=why))
        return not why

    # --------------------------------------------------------------------------------------------- step mode

    def toggle_step_mode(self) -> bool:
        """Step mode on: every lane starts again, one token at a time (the first step proposed at once); off: the
        lanes keep the steps taken, their specs with the user's picks forced (Replay makes the same tokens)."""
        if self.step_mode:
            return self._end_step_mode()
        state = self.state
        if self.runner.is_running() or self.holder is None or not self._check_can_run(state.request):
            return False
        if any(lane.spec.branch or lane.spec.replay_of for lane in state.lanes):
            state.show_notice(translate("controller", "Step mode starts every lane at step 0: remove the branch "
                                                      "lanes first (or Run them as ordinary lanes)."), level="info",
                              cause="step_mode")
            return False
        self.step_mode, self.stepping = True, []
        specs = state.specs
        job = jobs.step_job(self.holder, state.request, specs, self.stepping, lambda _session: None)
        self._start(JobKind.STEP, {(lane.key, 0): lane.spec for lane in state.lanes}, job,
                    _run_limit(specs, state.request))
        return True

    def step_all(self) -> bool:
        """Every lane takes its own pick at its proposed step."""
        return self._step(lambda session: session.step_all())

    def step_lane(self, index: int) -> bool:
        name = self.state.lanes[index].name
        return self._step(lambda session: session.accept(name))

    def step_take(self, index: int, step: int, token_id: int) -> bool:
        """Lane `index` takes `token_id` at its proposed step `step` instead of its own pick (a forced token)."""
        name = self.state.lanes[index].name
        proposed = len(self.state.lanes[index].trace.steps) - 1
        if self.state.lanes[index].spec.is_beam:
            self.state.show_notice(translate("controller", "A beam lane's step in step mode is its search's: accept "
                                                           "it (F8) or run the lane on (F9). To force a token, "
                                                           "branch from the beam lane after step mode."),
                                   level="info", cause="step_mode")
            return False
        if step != proposed:
            self.state.show_notice(translate("controller", "In step mode a lane takes a token at its next step "
                                                           "({step}) only.").format(step=proposed), level="info",
                                   cause="step_mode")
            return False
        return self._step(lambda session: session.take(name, token_id))

    def run_lane_to_end(self, index: int) -> bool:
        name = self.state.lanes[index].name
        return self._step(lambda session: session.run_to_end(name))

    def _step(self, advance) -> bool:
        if not self.step_mode or self.runner.is_running():
            return False
        state = self.state
        self._start(JobKind.STEP, {}, jobs.step_job(self.holder, state.request, state.specs, self.stepping, advance),
                    state.run_limit)
        return True

    def _end_step_mode(self) -> bool:
        if self.runner.is_running():
            return False
        self.step_mode = False
        session = self.stepping[0] if self.stepping else None
        self.stepping = []
        if session is None:
            return True
        state = self.state
        state.set_proposals({})
        finished = {}
        for index, lane in enumerate(state.lanes):
            kept = session.kept(lane.name)  # a beam lane stopped early: its search of that length, made now
            if kept is None:  # no step taken: its proposed step goes, it was never the lane's
                finished[(lane.key, 0)] = empty_trace(lane.spec)
                continue
            spec, finished[(lane.key, 0)] = kept
            state.keep_stepped(index, spec, (state.request.text, state.request.chat, state.request.system))
        state.finish_job(state.trace, finished)
        state.set_status(translate("controller", "step mode off: the lanes keep the steps taken"))
        return True

    def _finish_step(self, result: RunTrace) -> None:
        state = self.state
        first = state.trace is None
        finished = {(lane.key, 0): result.lane(lane.name) for lane in state.lanes}
        session = self.stepping[0]
        state.set_proposals({index: Proposal(len(trace.steps) - 1, tuple(session.beams(trace.name)))
                             for index, trace in enumerate(result.lanes)
                             if session.lane(trace.name).proposal is not None})
        state.finish_job(result if first else None, finished, grow=False)
        lane = state.selection.lane if state.selection else 0
        state.select(lane, len(state.lanes[lane].trace.steps) - 1)
        state.set_status(translate("controller", "step mode: double-click a candidate to take it, Run for one "
                                                 "step of every lane"))

    # ------------------------------------------------------------------------------------------------ replay

    def replay(self) -> RunRequest | None:
        """Re-run the shown run with the model (its lanes take the specs it was made with, seeds included);
        afterwards report whether every token matched. Returns the run's request (for the prompt panel)."""
        if self.step_mode:
            self._end_step_mode()  # the steps taken are replayed, not the proposed ones
        trace = self.state.shown_trace()
        if trace is None or self.holder is None or self.runner.is_running() or not trace.lanes:
            self.state.show_notice(translate("controller", "Replay needs a run (run or open one) and a model."))
            return None
        if not self._use_model_of(trace):
            return None
        self._replayed = replace(trace, lanes=list(trace.lanes))
        request = self.state.request.with_prompt_of(request_of(trace))
        self.state.set_request(request)
        self.state.show_trace(trace, specs_of(trace))  # the lanes as the run made them, seeds included
        try:
            targets = self._expand(self.state.lanes, request.seed)
            check_lane_models(list(targets.values()), self.holder.name)
        except ValueError as error:
            self.state.show_notice(translate("controller", "Cannot replay: {error}.").format(error=error))
            return None
        specs = list(targets.values())
        self._start(JobKind.REPLAY, targets, jobs.run_job(self.holder, request, specs), _run_limit(specs, request))
        return request

    def bring_back(self, node_id: int) -> bool:
        """Make the lanes of the path to session tree node `node_id` the lanes again (each made again with the
        model from its parent's tokens, checked token by token); the tree keeps every node."""
        from decoding.analysis import session_tree

        state = self.state
        trace = state.shown_trace()
        if trace is None or self.holder is None or self.runner.is_running():
            state.show_notice(translate("controller", "Bringing a node back needs a run (run or open one) and a "
                                                      "model."))
            return False
        nodes = session_tree.path(state.tree, node_id)
        try:
            for node in nodes:
                session_tree.check_same_model(trace, node, self.holder.name)
        except ValueError as error:
            state.show_notice(translate("controller", "Cannot bring the node back: {error}.").format(error=error))
            return False
        state.set_specs([session_tree.node_spec(node) for node in nodes], [self._colour_of(node) for node in nodes])
        state.trace = trace
        targets = {(lane.key, 0): lane.spec for lane in state.lanes}
        self._start(JobKind.RESTORE, targets, jobs.restore_job(self.holder, trace, node_id),
                    max(len(session_tree.full_tokens(state.tree, node.id)) for node in nodes))
        return True

    def _colour_of(self, node) -> int | None:
        """The colour a lane brought back from session tree node `node` gets: the colour of the lane showing it,
        else the one the node recorded, else that of the lane of its name (None: a free one)."""
        state = self.state
        showing = [lane.colour for lane in state.lanes if state.lane_nodes.get(lane.key) == node.id]
        named = [lane.colour for lane in state.lanes if lane.name == node.lane]
        return next(iter(showing), node.colour if node.colour is not None else next(iter(named), None))

    def _use_model_of(self, trace: RunTrace) -> bool:
        """Switch to the model the run was made with (by name or path); False with a notice if it is not
        prepared here."""
        from models.catalog import resolve

        if trace.model.name in (self.holder.name, "unknown"):
            return True
        for key in filter(None, (trace.model.name, trace.model.path)):
            try:
                return self.set_model(resolve(key))
            except FileNotFoundError:
                continue
        self.state.show_notice(translate("controller", "The run was made with model {name!r}, which is not prepared "
                                                       "here.").format(name=trace.model.name))
        return False

    def _report_replay(self) -> None:
        """Every token identical, or where each lane first differs and why (decoding.analysis.compare: a near-tie or a
        draw at an interval's edge can tip with another thread count or kernel order — said, not hidden)."""
        from decoding.analysis.compare import compare_traces

        before, self._replayed = self._replayed, None
        comparison = compare_traces(before, self.state.shown_trace())
        if comparison.same_tokens:
            self.state.set_status(translate("controller", "replay: every token identical to the saved run"))
            return
        self.state.show_notice(translate("controller", "Replay differs from the saved run: {differences}.").format(
            differences="; ".join(comparison.describe())))

    def _report_run_again(self) -> None:
        """The lanes' differences from the previous run (the setup's seeds are expected to differ: not listed)."""
        from decoding.analysis.compare import compare_traces

        before, self._compared = self._compared, None
        comparison = compare_traces(before, self.state.shown_trace())
        differences = [d.describe() for d in comparison.lanes if d.kind != "probabilities"]
        if not differences:
            self.state.set_status(translate("controller", "run again: every lane's tokens identical to the previous "
                                                          "run"))
            return
        self.state.show_notice(translate("controller", "Run again, against the previous run: {differences}.").format(
            differences="; ".join(differences)), level="info", cause="compare")

    # ------------------------------------------------------------------------------------------------- files

    def save(self, path: Path) -> bool:
        """Write the shown run; in step mode, the steps taken (step mode ends first: the proposed steps are not
        the run's, and the lanes' specs with the picks forced are what a replay of the file makes again)."""
        if self.step_mode:
            self._end_step_mode()
        trace = self.state.shown_trace()
        if trace is None or self.runner.is_running():
            self.state.show_notice(translate("controller", "Nothing to save yet: run or open a run first."))
            return False
        try:
            run_file.save(trace, path)
        except (OSError, ValueError) as error:
            self.state.show_notice(translate("controller",
                                             "Could not save {path}: {error}. The run is still here.")
                                             .format(path=path, error=error))
            return False
        self.state.set_status(translate("controller", "saved {path}").format(path=path))
        return True

    def open(self, path: Path) -> RunRequest | None:
        """Show a saved run (no model needed); returns its request for the prompt panel, None on failure."""
        if self.runner.is_running():
            self.state.show_notice(translate("controller", "Stop the run before opening another."))
            return None
        try:
            trace = run_file.load(path)
            specs = specs_of(trace)
        except (OSError, ValueError, KeyError, TypeError) as error:
            self.state.show_notice(translate("controller", "Could not open {path}: {error}").format(path=path,
                                                                                                    error=error))
            return None
        self.state.clear_notice()
        self.step_mode, self.stepping = False, []  # the opened run's lanes are not step mode's
        self.state.set_proposals({})
        self.state.show_trace(trace, specs)
        self._branch_keys = []
        self.state.set_model_name(f"{trace.model.name} (opened run)", trace.provider)
        self.state.set_status(translate("controller", "opened {path}").format(path=path))
        request = self.state.request.with_prompt_of(request_of(trace))
        self.state.set_request(request)
        return request

    # ------------------------------------------------------------------------------------- job callbacks

    def _start(self, kind: JobKind, targets: dict[tuple[int, int], LaneSpec], job: Job, limit: int) -> None:
        """Start `job`, whose lanes stream into `targets` ((lane key, member) -> spec, in the job's lane order)."""
        self.state.clear_notice(*STALE_AT_A_JOB)
        if self.state.notice is not None and self.state.notice.level == "error":
            self.state.clear_notice()
        self._targets = list(targets)
        self.state.start_job(kind, targets, limit)
        self.runner.start(job)

    def on_message(self, message: Message) -> None:
        if isinstance(message, StepMessage):
            key, member = self._targets[message.lane]
            self.state.add_step(self.state.index_of(key), message.record, member)
        elif isinstance(message, RunStartedMessage):
            self.state.set_running_trace(message.trace)
        elif isinstance(message, PrefillMessage):
            self.state.set_prefill(message.done, message.total)
        elif isinstance(message, StatusMessage):
            self.state.set_status(message.text)
        elif isinstance(message, ProviderMessage):
            self.state.set_model_name(self.holder.name if self.holder else "", message.provider)

    def on_finished(self, result) -> None:
        kind = self.state.job
        if kind is JobKind.SWEEP:
            self.state.clear_notice("sweep")  # a refused sweep's words no longer hold
            self.state.add_sweep(result)
            self.state.set_status(translate("controller",
                                            "temperature sweep of {lane} step {step}").format(lane=result.lane,
                                                                                              step=result.step))
            return
        if kind is JobKind.EXPLAIN:
            self._finish_explain(result)
            return
        if kind is JobKind.STEP:
            self._finish_step(result)
            return
        if kind is JobKind.MODEL_COMPARE:
            self._finish_model_compare(result)
            return
        finished: dict[tuple[int, int], LaneTrace] = dict(zip(self._targets, result.lanes, strict=True))
        if kind is JobKind.BRANCH:
            self.state.finish_job(None, finished)
        elif kind is JobKind.RESTORE:
            self.state.finish_job(replace(result, lanes=[]), finished)
        else:
            self.state.finish_job(result, finished)
        failed = [lane for lane in result.lanes if lane.error]
        error = result.error
        if error:
            self.state.show_notice(translate("controller",
                                             "The run stopped early: {error}. The text so far is kept.")
                                   .format(error=error))
        elif failed:
            stopped = translate("controller", "“{name}” stopped at step {step}: {error}")
            words = "; ".join(stopped.format(name=lane.name, step=len(lane.steps), error=lane.error)
                              for lane in failed)
            others = (translate("controller", "the other lanes went on") if len(failed) < len(result.lanes)
                      else translate("controller", "its text so far is kept"))
            self.state.show_notice(translate("controller", "{words} ({others}).").format(words=words, others=others))
        cancelled = any(lane.finish_reason == "cancelled" for lane in result.lanes)
        status = (QT_TRANSLATE_NOOP("controller", "stopped") if cancelled else
                  QT_TRANSLATE_NOOP("controller", "stopped early") if error or failed else
                  QT_TRANSLATE_NOOP("controller", "done"))
        self.state.set_status(translate("controller", status))
        if kind is JobKind.REPLAY:
            self._report_replay()
        elif kind is JobKind.RUN and self._compared is not None:
            self._report_run_again()

    def _drop_unmade_lanes(self) -> bool:
        """The lanes a failed branch or replay inserted and never filled go (a failed try leaves nothing behind)."""
        dropped = False
        for key, _member in self._targets:
            try:
                index = self.state.index_of(key)
            except KeyError:
                continue
            if not self.state.lanes[index].trace.steps:
                self.state.remove_lane(index)
                self._branch_keys = [k for k in self._branch_keys if k != key]
                dropped = True
        return dropped

    def _finish_explain(self, result: ExplainResult | None) -> None:
        if result is None:  # stopped before the model ran
            self.state.fail_job()
            self.state.set_status(translate("controller", "stopped"))
            return
        self.state.add_explanation(result)
        self.state.set_status(translate("controller", "explained {len} tokens ({layers} layers × {heads} heads): see "
                                                      "the Attention and Logit lens tabs")
                                                      .format(len=len(result.tokens), layers=result.layers,
                                                              heads=result.heads))

    def _finish_model_compare(self, result) -> None:
        if result is None:  # stopped
            self.state.fail_job()
            self.state.set_status(translate("controller", "stopped"))
            return
        self.state.set_model_comparison(result)
        self.state.set_status(translate("controller", "compared “{lane}” with {model}: see the Model comparison tab")
                              .format(lane=result.lane_name, model=result.other.name))

    def on_failed(self, message: str, _details: str = "") -> None:
        kind = self.state.job
        self.state.fail_job()
        self.state.set_status(translate("controller", "failed"))
        if kind is JobKind.BRANCH and self._drop_unmade_lanes():
            self.state.show_notice(translate("controller", "Could not make the lane: {message}. Nothing was "
                                                           "added.").format(message=message))
            return
        if kind is JobKind.MODEL_COMPARE:
            self.state.show_notice(translate("controller", "Could not compare the models: {message}.")
                                   .format(message=message))
            return
        self.state.show_notice(translate("controller",
                                         "Could not explain the lane: {message}.")
                                         .format(message=message) if kind is JobKind.EXPLAIN else
                               translate("controller", "{message}. The text so far is kept.").format(message=message))


def _branches_from(lane: Lane, parent: str) -> bool:
    return lane.spec.branch is not None and lane.spec.branch.parent == parent


def _broken_branch_reason(lane: Lane, parent: Lane | None, prompt: tuple) -> str:
    """Why a branch lane's branch point no longer holds ("" if it does)."""
    if parent is None:
        return translate("controller", "its parent “{parent}” is gone").format(parent=lane.spec.branch.parent)
    if lane.branch_prompt is not None and lane.branch_prompt != prompt:
        return translate("controller", "the prompt changed")
    if parent.spec.do_sample and parent.spec.seed is None:
        return translate("controller", "its parent “{parent}” draws with a fresh seed each run").format(
            parent=parent.name)
    return ""


def _run_limit(specs: list[LaneSpec], request: RunRequest) -> int:
    """Steps of the longest lane: each lane's own max_new_tokens, else the run's."""
    return max((spec.max_new_tokens or request.max_new_tokens for spec in specs), default=request.max_new_tokens)
