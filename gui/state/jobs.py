"""The jobs the window's worker thread runs, Qt-free: a run of every lane, a branch from a finished run, a
temperature sweep, a lane's explanation (attention, logit lens). A job is `job(emit, cancelled) -> RunTrace` (a
sweep's: TemperatureSweep, an explanation's: ExplainResult); it reports through typed messages passed to `emit`.

A run also carries branch lanes that the engine cannot follow inside the run (a branch of a beam lane or of
another branch): they run right after it, each from its parent's first tokens (prompt and prefix prefilled
once), in the order their parents need.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from decoding.analysis import session_tree
from decoding.analysis.sweep import sweep_inputs, temperature_sweep
from decoding.chain.spec import LaneSpec, follows_in_run, lane_spec, parse_lane
from decoding.engine.engine import branch_prefix, own_model, replay_prefix
from decoding.engine.lane_state import empty_trace
from decoding.engine.step_mode import StepSession
from decoding.records.explain import ExplainResult
from decoding.records.trace import LaneTrace, RunTrace, StepRecord, TemperatureSweep
from gui.i18n import QT_TRANSLATE_NOOP, translate
from gui.state.model_comparison import ModelComparison, compared_rows, comparison_of, side_of
from gui.state.model_holder import ModelHolder, RunRequest, prompt_info


@dataclass(frozen=True)
class StatusMessage:
    text: str


@dataclass(frozen=True)
class ProviderMessage:
    provider: str  # the execution provider really active


@dataclass(frozen=True)
class RunStartedMessage:
    trace: RunTrace  # the run's prompt, settings and model identity, no lanes yet (an autosave needs them)


@dataclass(frozen=True)
class PrefillMessage:
    done: int  # prompt tokens read so far (the prompt goes through the model in chunks)
    total: int


@dataclass(frozen=True)
class StepMessage:
    lane: int  # index in the job's lanes
    record: StepRecord


@dataclass(frozen=True)
class WhyProgressMessage:
    done: int  # knock-out rows done (decoding.analysis.why)
    total: int


Message = StatusMessage | ProviderMessage | RunStartedMessage | PrefillMessage | StepMessage | WhyProgressMessage
Emit = Callable[[Message], None]
Job = Callable[[Emit, Callable[[], bool]], RunTrace]


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


def run_job(holder: ModelHolder, request: RunRequest, specs: list[LaneSpec]) -> Job:
    """Load the model if needed, run every lane (one batched run, then the branches it cannot follow), stream
    StepMessages with the lane's index in `specs`. The result's lanes are in `specs`' order."""
    main, later = run_order(specs)

    def job(emit: Emit, cancelled: Callable[[], bool]) -> RunTrace:
        if holder.loaded is None:  # the status bar says "running…" already, and again at the first step
            emit(StatusMessage(translate("jobs", "loading {model}…").format(model=holder.name)))
        model, engine = holder.get(), holder.engine()
        emit(ProviderMessage(model.provider))
        prompt = prompt_info(model, request)
        run = engine.start(prompt, [specs[i] for i in main], max_new_tokens=request.max_new_tokens,
                           model=model.info, provider=model.provider, base_seed=request.seed, cancel=cancelled,
                           on_prefill=_prefill_reporter(emit))
        emit(RunStartedMessage(replace(run.trace, lanes=[])))
        for lane, record in run:
            emit(StepMessage(main[lane], record))
        trace = run.trace
        lanes: dict[int, LaneTrace] = dict(zip(main, trace.lanes, strict=True))
        for index in later:
            if cancelled():
                break
            shown = replace(trace, lanes=[lanes[i] for i in sorted(lanes)])
            lanes[index] = _branch_lane(model, engine, shown, specs[index], cancelled,
                                        lambda record, i=index: emit(StepMessage(i, record)), emit)
        trace.lanes = [lanes[i] for i in sorted(lanes)]
        return trace

    return job


def branch_job(holder: ModelHolder, trace: RunTrace, spec: LaneSpec) -> Job:
    """Continue `spec.branch.parent` of a finished run from the branch step with the picked token, under
    spec's strategy. Streams StepMessages for lane 0; the result has that one lane."""

    def job(emit: Emit, cancelled: Callable[[], bool]) -> RunTrace:
        model = holder.get()
        emit(ProviderMessage(model.provider))
        lane = _branch_lane(model, holder.engine(), trace, spec, cancelled,
                            lambda record: emit(StepMessage(0, record)), emit)
        return replace(trace, lanes=[lane])

    return job


def replay_not_taken_job(holder: ModelHolder, trace: RunTrace, spec: LaneSpec) -> Job:
    """Run replay lane `spec` (spec.replay_of set) of a finished run from its replay step: the replayed lane's
    tokens before it prefilled once, its draws there skipped. Streams StepMessages for lane 0."""

    def job(emit: Emit, cancelled: Callable[[], bool]) -> RunTrace:
        model = holder.get()
        emit(ProviderMessage(model.provider))
        return holder.engine().run(trace.prompt, [spec], max_new_tokens=trace.settings.max_new_tokens,
                                   model=model.info, provider=model.provider, prefix=replay_prefix(trace, spec),
                                   cancel=cancelled, on_step=lambda _lane, record: emit(StepMessage(0, record)),
                                   on_prefill=_prefill_reporter(emit))

    return job


def restore_job(holder: ModelHolder, trace: RunTrace, node_id: int) -> Job:
    """The lanes of every node on the path to session tree node `node_id` of `trace`, made again
    (decoding.analysis.session_tree.reproduce_path): the result's lanes, parents first."""

    def job(emit: Emit, _cancelled: Callable[[], bool]) -> RunTrace:
        model = holder.get()
        emit(ProviderMessage(model.provider))
        lanes = session_tree.reproduce_path(holder.engine(), trace, node_id, trace.model.name)
        return replace(trace, lanes=lanes, provider=model.provider)

    return job


def step_job(holder: ModelHolder, request: RunRequest, specs: list[LaneSpec], session_box: list,
             advance: Callable[[StepSession], None]) -> Job:
    """Step mode: `advance` the session in `session_box` (made first, from `specs` and `request`, when the box is
    empty), then every running lane's next step is proposed (a beam lane's: its search's next step). The result's
    lanes are the session's lanes as shown (steps taken, the proposed next step last)."""

    def job(emit: Emit, _cancelled: Callable[[], bool]) -> RunTrace:
        model = holder.get()
        emit(ProviderMessage(model.provider))
        if not session_box:
            session_box.append(StepSession(holder.engine(), prompt_info(model, request), specs,
                                           max_new_tokens=request.max_new_tokens, base_seed=request.seed,
                                           model=model.info))
        session = session_box[0]
        advance(session)
        for name in session.running():
            session.propose(name)
        trace = holder.engine().start(session.prompt, specs, max_new_tokens=request.max_new_tokens,
                                      model=model.info, provider=model.provider, base_seed=request.seed).trace
        trace.lanes = [session.shown(spec.name) for spec in specs]
        return trace

    return job


def sweep_job(holder: ModelHolder, trace: RunTrace, lane: str, step: int) -> Callable:
    """A temperature sweep of lane `lane`'s `step`: one prefill of the prompt and the lane's tokens before the
    step, on the lane's model, gives its raw logits (exactly the run's), which go through the lane's processors
    at each temperature."""

    def job(emit: Emit, _cancelled: Callable[[], bool]) -> TemperatureSweep:
        model = holder.get()
        emit(ProviderMessage(model.provider))
        inputs = sweep_inputs(trace, lane, step)
        own = own_model(lane_spec(trace.lane(lane)), trace.model.name)
        lane_model = None if own is None else holder.engine().models(own)
        source, tokenizer = model.decoder, model.tokenizer
        if lane_model is not None:
            source = lane_model.source
        if lane_model is not None and lane_model.tokenizer is not None:  # a model of another tokenizer
            tokenizer = lane_model.tokenizer.text
            inputs = replace(inputs, eos_token_ids=list(lane_model.tokenizer.eos_token_ids))
        _state, logits = source.prefill(inputs.ids)
        return temperature_sweep(logits, inputs, text=tokenizer.piece)

    return job


def explain_job(holder: ModelHolder, token_ids: list[int], prompt_length: int) -> Callable:
    """A lane's sequence (the prompt's `prompt_length` tokens first) through the model's inspection model,
    opened once per model: an ExplainResult (None when stopped before the model ran)."""

    def job(emit: Emit, cancelled: Callable[[], bool]) -> ExplainResult | None:
        if not holder.explainer_open:
            text = translate("jobs", "opening the inspection model of {model} (once per model)…")
            emit(StatusMessage(text.format(model=holder.name)))
        explainer = holder.explainer()
        if cancelled():
            return None
        text = translate("jobs", "explaining {count} tokens: attention of every layer and head, logit lens…")
        emit(StatusMessage(text.format(count=len(token_ids))))
        return explainer.explain(token_ids, prompt_length)

    return job


def why_job(holder: ModelHolder, trace: RunTrace, lane: str, step: int, a: int | None, b: int | None) -> Callable:
    """Why lane `lane` chose A and not B at `step` (models.why: the knock-out of every earlier position through the
    run's decoder, streaming WhyProgressMessages, and the depth split): a WhyResult; None when stopped."""
    from decoding.analysis.why import KnockoutCancelled
    from models.why import why_step

    prompt_ids, lane_trace = list(trace.prompt.ids), trace.lane(lane)

    def job(emit: Emit, cancelled: Callable[[], bool]):
        model = holder.get()
        emit(ProviderMessage(model.provider))

        def progress(done: int, total: int) -> bool:
            emit(WhyProgressMessage(done, total))
            return cancelled()

        try:
            return why_step(model, holder.path, prompt_ids, lane_trace, step, a, b, progress=progress)
        except KnockoutCancelled:
            return None

    return job


COMPARE_STAGES = (  # each for model A, then model B
    QT_TRANSLATE_NOOP("jobs", "{lane}'s tokens through {model}"),
    QT_TRANSLATE_NOOP("jobs", "free-running greedy of {model}"),
)


def model_compare_job(holder: ModelHolder, other: Path, trace: RunTrace, lane_key: int, lane_name: str) -> Callable:
    """Lane `lane_name`'s tokens in `trace` read by the holder's model (the run's) and by the prepared model in
    `other`, one prefill of the whole sequence each; then each model's free-running greedy continuation of the
    prompt (as long as the run's max_new_tokens). A ModelComparison; None when stopped."""
    token_ids = list(trace.lane(lane_name).token_ids)

    def job(emit: Emit, cancelled: Callable[[], bool]) -> ModelComparison | None:
        from runtime.sequence_logits import SequenceScorer

        sides = (side_of(holder.path), side_of(other))
        paths = (holder.path, other)

        def stage(index: int) -> None:
            words = translate("jobs", COMPARE_STAGES[index // 2]).format(lane=f"“{lane_name}”",
                                                                        model=sides[index % 2].name)
            emit(StatusMessage(translate("jobs", "comparing models ({done}/4): {stage}…").format(done=index + 1,
                                                                                             stage=words)))

        logits = compared_rows(*(lambda p=p: SequenceScorer(p, holder.device) for p in paths), trace.prompt.ids,
                               token_ids, cancelled, stage)
        greedy = None if logits is None else _greedy_pair(holder, other, trace, cancelled, stage)
        if greedy is None:
            return None
        return comparison_of(lane_key, lane_name, sides, logits, token_ids, holder.tokenizer().piece, greedy)

    return job


def _greedy_pair(holder: ModelHolder, other: Path, trace: RunTrace, cancelled, stage) -> dict | None:
    """Both models' free-running greedy ids and texts from the run's prompt (compare-models' `greedy` record);
    None when stopped."""
    from models.open_model import open_model

    tokenizer = holder.tokenizer()
    ids = []
    for index, opened in ((2, holder.get), (3, lambda: open_model(other, holder.device, tokenizer))):
        if cancelled():
            return None
        stage(index)
        model = opened()
        run = model.engine().start(trace.prompt, [parse_lane("greedy")], max_new_tokens=trace.settings.max_new_tokens,
                                   model=model.info, provider=model.provider, cancel=cancelled)
        for _ in run:
            pass
        if cancelled():
            return None
        ids.append(list(run.trace.lanes[0].token_ids))
    return {"reference_ids": ids[0], "other_ids": ids[1], "reference_text": tokenizer.decode(ids[0]),
            "other_text": tokenizer.decode(ids[1])}


def _prefill_reporter(emit: Emit) -> Callable[[int, int], None]:
    return lambda done, total: emit(PrefillMessage(done, total))


def _branch_lane(model, engine, trace: RunTrace, spec: LaneSpec, cancelled, on_record, emit: Emit) -> LaneTrace:
    """One branch lane as a one-lane run restarting from its parent's tokens in `trace` (the prompt and that
    prefix prefilled once), the picked token forced at the branch step."""
    step, token = spec.branch.step, spec.branch.token_id
    try:
        prefix = branch_prefix(trace, spec.branch.parent, step)
    except (KeyError, ValueError) as error:  # the parent ended before the branch step, or is gone
        lane = empty_trace(spec)
        lane.error, lane.finish_reason = f"cannot branch: {error}", "error"
        return lane
    run_spec = replace(spec, branch=None, forced={step: token})
    result = engine.run(trace.prompt, [run_spec], on_step=lambda _lane, record: on_record(record),
                              max_new_tokens=trace.settings.max_new_tokens, model=model.info,
                              provider=model.provider, prefix=prefix, cancel=cancelled,
                              on_prefill=_prefill_reporter(emit))
    lane = result.lanes[0]
    lane.branch = spec.branch.to_dict()
    lane.config = spec.to_config()
    if result.error and not lane.error:
        lane.error = result.error
    return lane
