"""Run: every lane on the request's prompt (one batched run, then the branch lanes the engine cannot follow inside
it, each from its parent's first tokens, in the order their parents need); "Run again and compare" says where
each lane first differs from the run shown before.

The prompt is encoded once, here on the window's thread with the model's tokenizer (read from its folder in
milliseconds, no model), and its length checked once against the model's positions for the longest lane, before
any model work; the work runs the lanes on that PromptInfo. Branch points stay valid while the tokens before
them can be reproduced: a run whose prompt changed, or whose branch parent is gone, fans out or draws a fresh
seed, turns those branch lanes into ordinary lanes of their own strategy first (and says which)."""

from __future__ import annotations

from dataclasses import replace

from decoding.analysis import fanout
from decoding.chain.spec import LaneSpec, follows_in_run
from decoding.engine.engine import Prefix, branch_prefix
from decoding.engine.lane_state import empty_trace
from decoding.records.trace import LaneTrace, PromptInfo, RunTrace
from gui.i18n import translate
from gui.state.model_holder import ModelHolder, check_lane_models
from gui.state.refusals import error_text
from gui.state.requests import RunRequest
from gui.state.run_state import Lane, RunState
from gui.state.tasks.base import Desk, Targets, Task, finish_lanes, run_limit
from gui.state.tasks.kind import TaskKind
from gui.state.tasks.messages import (
    Cancelled,
    Emit,
    ProviderMessage,
    RunStartedMessage,
    StatusMessage,
    StepMessage,
    prefill_reporter,
)


class RunTask(Task):
    kind = TaskKind("run", replaces_run=True, new_run=True, adds_run_text=True)

    def __init__(self, holder: ModelHolder, request: RunRequest, targets: Targets, limit: int,
                 prompt: PromptInfo | None = None, compared: RunTrace | None = None) -> None:
        """`prompt`: the request's prompt encoded (None: the work encodes it); `compared`: the run a "Run again
        and compare" compares this one with."""
        self.holder, self.request, self.targets, self.limit = holder, request, targets, limit
        self.prompt, self.compared = prompt, compared
        self.specs = list(targets.values())
        self.order = run_order(self.specs)

    def work(self, emit: Emit, cancelled: Cancelled) -> RunTrace:
        """Load the model if needed and run every lane, streaming StepMessages with the lane's index in the
        targets; the result's lanes are in the targets' order."""
        holder, request, specs = self.holder, self.request, self.specs
        main, later = self.order
        if holder.loaded is None:  # the status bar says "running…" already, and again at the first step
            emit(StatusMessage(translate("jobs", "loading {model}…").format(model=holder.name)))
        model, engine = holder.get(), holder.engine()
        emit(ProviderMessage(model.provider))
        prompt = self.prompt or model.encode_prompt(request.text, chat=request.chat, system=request.system)
        run = engine.start(prompt, [specs[i] for i in main], max_new_tokens=request.max_new_tokens,
                           model=model.info, provider=model.provider, base_seed=request.seed, cancel=cancelled,
                           on_prefill=prefill_reporter(emit))
        emit(RunStartedMessage(replace(run.trace, lanes=[])))
        for lane, record in run:
            emit(StepMessage(main[lane], record))
        trace = run.trace
        lanes: dict[int, LaneTrace] = dict(zip(main, trace.lanes, strict=True))
        for index in later:
            if cancelled():
                break
            shown = replace(trace, lanes=[lanes[i] for i in sorted(lanes)])
            lanes[index] = branch_lane(model, engine, shown, specs[index], cancelled,
                                       lambda record, i=index: emit(StepMessage(i, record)), emit)
        trace.lanes = [lanes[i] for i in sorted(lanes)]
        return trace

    def finished(self, state: RunState, result: RunTrace) -> None:
        finish_lanes(state, self.targets, result, result)
        if self.compared is not None:
            _report_run_again(state, self.compared)


def prepare(desk: Desk, request: RunRequest, compare: bool = False) -> RunTask | None:
    """The run of every lane on `request`'s prompt, or None with a notice (a model, a prompt that fits, lanes
    that can run; compare: a run to compare with)."""
    state = desk.state
    if desk.busy():
        return None
    previous = state.shown_trace() if compare else None
    if compare and (previous is None or not previous.lanes):
        state.show_notice(translate("controller", "Run again and compare needs a run to compare with (run or open "
                                                  "one)."))
        return None
    prompt = check_run(desk, request)
    if prompt is False:
        return None
    said = [words for words in (settle_picks(state, request), settle_branches(state, request)) if words]
    if said:
        state.show_notice(" ".join(said), level="info", cause="branches")
    limit = run_limit(state.specs, request.max_new_tokens)  # the lanes' own limits as settled
    try:
        task = RunTask(desk.holder, request, expand(state.lanes, request.seed), limit, prompt)
        check_lane_models(task.specs, desk.holder.name)
    except ValueError as error:
        state.show_notice(translate("controller", "Cannot run: {error}.").format(error=error_text(error)))
        return None
    task.compared = replace(previous, lanes=list(previous.lanes)) if previous is not None else None
    return task


def check_run(desk: Desk, request: RunRequest) -> PromptInfo | None | bool:
    """The refusals a run meets before any work — no model, an empty prompt, a prompt past the model's positions
    — said in a notice (False); else the prompt encoded (None: its tokenizer could not be read). The window asks
    "Save changes?" only after these."""
    if not check_can_run(desk, request):
        return False
    try:
        return checked_prompt(desk.holder, request, run_limit(desk.state.specs, request.max_new_tokens))
    except ValueError as error:
        desk.state.show_notice(translate("controller", "Cannot run: {error}.").format(error=error), cause="prompt")
        return False


def check_can_run(desk: Desk, request: RunRequest) -> bool:
    if desk.holder is None:
        desk.state.show_notice(translate("controller", "No model: choose or prepare one in the Model list first."))
        return False
    if not request.text.strip():
        desk.state.show_notice(translate("controller", "The prompt is empty: type something for the lanes to "
                                                       "continue."), cause="prompt")
        return False
    return True


def checked_prompt(holder: ModelHolder, request: RunRequest, limit: int) -> PromptInfo | None:
    """The request's prompt as the run records it, encoded by the model's tokenizer alone, and checked once to
    fit the model's positions with `limit` new tokens (ValueError in words: the prompt, or max_new_tokens, and
    what the model allows). None when the tokenizer cannot be read: the run's own load reports what is wrong."""
    from decoding.engine.engine import check_positions

    try:
        prompt, positions = holder.encode_prompt(request), holder.max_positions()
    except OSError:
        return None
    check_positions(len(prompt.ids), limit, positions)
    return prompt


def expand(lanes: list[Lane], base_seed: int | None) -> Targets:
    """What each lane runs, by (lane key, member): itself, or its fan-out's members (seeds seed, seed+1, …
    from one seed drawn now, recorded in the run)."""
    targets: Targets = {}
    for lane in lanes:
        members = fanout.fan_out(lane.spec, lane.fanout, base_seed) if lane.fanout > 1 else [lane.spec]
        targets.update({(lane.key, k): spec for k, spec in enumerate(members)})
    return targets


def run_order(specs: list[LaneSpec]) -> tuple[list[int], list[int]]:
    """(lanes of the batched run, branch lanes run after it in an order where every parent comes first)."""
    main = [i for i, s in enumerate(specs) if s.branch is None or follows_in_run(s, specs)]
    later = [i for i in range(len(specs)) if i not in main]
    done = {specs[i].name for i in main}
    ordered: list[int] = []
    while later:
        ready = [i for i in later if specs[i].branch.parent in done]
        if not ready:
            names = ", ".join(repr(specs[i].name) for i in later)
            raise ValueError(f"branch lanes {names} have no parent lane in this run")
        ordered += ready
        done |= {specs[i].name for i in ready}
        later = [i for i in later if i not in ready]
    return main, ordered


def branch_lane(model, engine, trace: RunTrace, spec: LaneSpec, cancelled: Cancelled, on_record, emit: Emit
                ) -> LaneTrace:
    """One branch lane as a one-lane run restarting from its parent's tokens in `trace` (the prompt and that
    prefix prefilled once), the picked token forced at the branch step."""
    try:
        run_spec, prefix = branch_run_inputs(trace, spec)
    except (KeyError, ValueError) as error:  # the parent ended before the branch step, or is gone
        lane = empty_trace(spec)
        lane.error, lane.finish_reason = f"cannot branch: {error}", "error"
        return lane
    result = engine.run(trace.prompt, [run_spec], on_step=lambda _lane, record: on_record(record),
                        max_new_tokens=trace.settings.max_new_tokens, model=model.info, provider=model.provider,
                        prefix=prefix, cancel=cancelled, on_prefill=prefill_reporter(emit))
    lane = result.lanes[0]
    lane.branch = spec.branch.to_dict()
    lane.config = spec.to_config()
    if result.error and not lane.error:
        lane.error = result.error
    return lane


def branch_run_inputs(trace: RunTrace, spec: LaneSpec) -> tuple[LaneSpec, Prefix]:
    """The one-lane run branch lane `spec` is: its parent's first tokens in `trace` as the prefix, the picked token
    forced at the branch step. KeyError / ValueError when the parent is gone or ended before that step."""
    step = spec.branch.step
    prefix = branch_prefix(trace, spec.branch.parent, step)
    return replace(spec, branch=None, forced={step: spec.branch.token_id}), prefix


def settle_picks(state: RunState, request: RunRequest) -> str:
    """Hand-picked tokens (step mode, Force for all lanes) belong to the prompt they were picked for: a run of
    another prompt runs those lanes without them. What to say of it ("" when nothing changed)."""
    dropped = state.drop_picks((request.text, request.chat, request.system))
    if not dropped:
        return ""
    notice = translate("controller", "The prompt changed: these lanes run without the tokens picked by hand (and "
                                     "the length step mode stopped at) for the last prompt: {lanes}.")
    return notice.format(lanes=", ".join(f"“{name}”" for name in dropped))


def settle_branches(state: RunState, request: RunRequest) -> str:
    """Turn branch lanes whose branch point no longer holds into ordinary lanes; what to say of it ("" for
    none)."""
    key = (request.text, request.chat, request.system)
    by_name = {lane.name: lane for lane in state.lanes}
    turned = []
    for index, lane in enumerate(state.lanes):
        branch = lane.spec.branch
        if branch is not None:
            reason = _broken_branch_reason(lane, by_name.get(branch.parent), key)
            if not reason and by_name[branch.parent].fanout > 1:
                reason = translate("controller", "its parent “{parent}” fans out now").format(parent=branch.parent)
        elif lane.spec.replay_of is not None:  # a replay reproduces its own prefix: only the prompt matters
            changed = lane.branch_prompt not in (None, key)
            reason = translate("controller", "the prompt changed") if changed else ""
        else:
            continue
        if reason:
            old_name = lane.name
            state.detach_branch(index)  # named by its strategy from now on when its name was the branch's
            renamed = "" if lane.name == old_name else f" → “{lane.name}”"
            turned.append(f"“{old_name}”{renamed} ({reason})")
    if not turned:
        return ""
    notice = translate("controller", "These branch lanes now run as ordinary lanes of their own strategy: {lanes}.")
    return notice.format(lanes="; ".join(turned))


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


def _report_run_again(state: RunState, before: RunTrace) -> None:
    """The lanes' differences from the previous run (the setup's seeds are expected to differ: not listed)."""
    from decoding.analysis.compare import compare_traces

    comparison = compare_traces(before, state.shown_trace())
    differences = [d.describe() for d in comparison.lanes if d.kind != "probabilities"]
    if not differences:
        state.set_status(translate("controller", "run again: every lane's tokens identical to the previous run"))
        return
    state.show_notice(translate("controller", "Run again, against the previous run: {differences}.").format(
        differences="; ".join(differences)), level="info", cause="compare")
