"""The batched lane engine: one prompt prefilled once per model, every lane of a model (every beam row included)
advanced with ONE `source.step` call of that model per step, a StepRecord per lane per step streamed as it happens.

    engine = Engine(source, tokenizer, eos_token_ids=[2])
    run = engine.start(PromptInfo(text, ids), [LaneSpec("greedy"), ...], max_new_tokens=64)
    for lane_index, record in run:        # or engine.run(..., on_step=callback)
        ...                               # stream to a GUI / progress bar
    trace = run.trace                     # RunTrace, analysis included once the run ended

Rows: each model's source keeps an opaque batch of KV rows. Each step the engine lists, for every running lane,
which old row each of its new rows continues and with which token; one `source.step` per model builds its new batch
(fork, reorder and drop are all that one selection) and returns one logits row per new row.

Branching: a lane whose spec has `branch={parent, step s, token t}` copies the parent's records before s,
takes t at s from the parent's own logits row, and continues in a fork of the parent's row (no prefix
recomputed). A lane with `forced={s: t}` takes t at step s instead of choosing. `Engine.start(prefix=...)`
continues from given tokens (prefilled with the prompt in one call) for branching after a run ended.

Lanes on their own models: a lane whose spec names a `model` other than the run's advances on that model's source
(from the Engine's `models` resolver), with its own prefill and KV rows; the lanes of one model still take one
batched `source.step` per step, each model its own call, and records stream in the lanes' order as before. A
model of another tokenizer (LaneModel.tokenizer) reads the prompt as its tokenizer encodes it (recorded in its
lanes' `prompt_ids`), and its lanes' tokens, texts and eos ids are its own.

Replays of a branch not taken (`replay_of={lane, step s, token t}`, decoding.analysis.branch_not_taken) take t at s
and, when sampled, still draw there, so their later draws are the replayed lane's. Seed fan-out members
(decoding.analysis.fanout) are ordinary lanes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from decoding.analysis import analysis
from decoding.analysis.text_align import tokenizer_of
from decoding.chain.chain import uniforms_drawn
from decoding.chain.parameters import Range, check_int, fail, parameter
from decoding.chain.selectors import WIDER_PREFIX
from decoding.chain.spec import LaneSpec, assign_seeds, follows_in_run
from decoding.engine.lane_state import LaneState, SingleRowLaneState, new_lane_state
from decoding.engine.protocol import (
    InFlight,
    LaneModel,
    LogitsSource,
    ModelResolver,
    PartialRows,
    PositionLimit,
    PrefillCancelled,
    RowSummarizer,
    TokenText,
)
from decoding.engine.row_batch import decide_together
from decoding.records.model_info import LaneModelInfo
from decoding.records.stats import MIN_TOP_N, LogitsRowCache
from decoding.records.trace import (
    CriticalSettings,
    ModelInfo,
    PromptInfo,
    RunSettings,
    RunTrace,
    StepRecord,
)

Cancel = threading.Event | Callable[[], bool] | None
StepCallback = Callable[[int, StepRecord], None]
PrefillCallback = Callable[[int, int], None]  # (prompt tokens read, prompt tokens in all), see Engine.start


@dataclass
class Prefix:
    """Start every lane of a run after these already chosen tokens (e.g. a parent lane's first s tokens
    of a finished run): they are prefilled with the prompt in one call and `records` (one per token) are
    copied into every lane's trace for those steps."""

    token_ids: list[int]
    records: list[StepRecord] = field(default_factory=list)
    draws: int = 0  # sampled lanes skip this many draws first (a replay continuing a sampled lane's prefix)
    # the tokenizer its ids are in (LaneModelInfo.tokenizer; None: the run's): only lanes of it can continue them
    tokenizer: str | None = None


def branch_prefix(trace: RunTrace, parent: str, step: int) -> Prefix:
    """The Prefix for branching from lane `parent` of a finished run at `step` (its first `step` tokens)."""
    lane = trace.lane(parent)
    if not 0 <= step < len(lane.steps) + 1 or step > len(lane.token_ids):
        raise ValueError(f"invalid branch step={step}: allowed 0..{len(lane.token_ids)} for lane {parent!r}")
    return Prefix(list(lane.token_ids[:step]), [replace(r) for r in lane.steps[:step]], tokenizer=tokenizer_of(lane))


def replay_prefix(trace: RunTrace, spec: LaneSpec) -> Prefix:
    """The Prefix for starting replay lane `spec` (spec.replay_of set) of a finished run at its replay step:
    the replayed lane's tokens and records before it, and the draws that lane's own sampler made there (its
    copied steps before a branch step and its forced steps drew nothing), so the replay draws what it did."""
    marker = spec.replay_of
    lane = trace.lane(marker.lane)
    if marker.step > len(lane.steps):
        raise ValueError(f"invalid replay step={marker.step}: allowed 0..{len(lane.steps)} for lane {lane.name!r}")
    own = [r for r in lane.steps[: marker.step] if lane.branch is None or r.step > lane.branch["step"]]
    draws = uniforms_drawn(own)
    return Prefix(list(lane.token_ids[: marker.step]), [replace(r) for r in lane.steps[: marker.step]], draws,
                  tokenizer_of(lane))


class Engine:
    """Runs lanes side by side on one LogitsSource (and the sources of the models lanes name, `models`), with the
    following steps in order:

    1. Check the run (lanes, names, branches, prefix) and give every sampled lane without a seed one.
    2. Prefill: for each model group (the run's model, and each model lanes name), the prompt (and a Prefix's
       tokens) in one `source.prefill` call of that model (the source reads it in chunks, reporting progress and
       honouring a cancel between them); its last logits row is the first batch, which the group's lanes start
       from.
    3. Each step, every running lane decides (in-run branch lanes after the others, so that their parent has
       chosen and still holds the logits row to fork):
        a) read its rows' raw logits and their Softmax from the batch's LogitsRowCache: one exp per logits row
           (or the source's RowSummary of it), shared by every lane and beam reading that row;
        b) apply its chain's stages in order (decoding.chain.chain; transformers' order: repetition_penalty,
           no_repeat_ngram_size, min_new_tokens, then under do_sample temperature, top_k, top_p, min_p,
           typical_p; or the lane's processor_order): to the raw logits on a single-row lane, to each beam's
           log_softmax on a beam lane (where, with no processor and no forced token, the candidates come from
           each beam's best ids);
        c) choose: the forced token at a branch point or forced step; else the chain's selector, argmax (greedy)
           or a seeded draw by inverse CDF (sample; u and the token's interval recorded), or a BeamSearch step
           (which beams go on, reordered, with which tokens; every candidate recorded); the chain accepts the
           token (mirostat's mu follows it);
        d) summarise the raw and the processed distribution (probability, entropy, margin, kept, top-N) into
           a StepRecord and stream it as (lane index, record);
        e) stop the lane on eos, a stop string or its length (a beam lane: when the search is done).
       A branch lane before its branch step copies its parent's record instead. With batched rows (the
       default), the greedy and sampled lanes that apply the same processors decide a) to e) as one group
       first (decoding.engine.row_batch: each distinct row processed and summarised once, its lanes' draws walking
       the statistics' top-N first), with the same records as deciding them one by one; their records are
       streamed in the lanes' order.
    4. Every running lane lists (old row, token) for each of its next rows; pairs listed by several lanes are
       computed once.
    5. Unless cancelled, one `source.step` call per model group for all its rows: the new logits rows are the
       group's next batch, and each of its lanes takes its rows from it. Back to 3 until no lane runs.
    6. Close the lanes (a beam lane's steps become the records along its best final sequence), time the
       run and analyse it (divergences, near-ties, close draws).
    """

    def __init__(
        self,
        source: LogitsSource,
        tokenizer: TokenText,
        eos_token_ids: Sequence[int],
        *,
        top_n: int = MIN_TOP_N,
        near_tie_threshold: float = 0.05,
        critical: CriticalSettings | None = None,
        batched_rows: bool = True,
        models: ModelResolver | None = None,
    ) -> None:
        """`batched_rows`: decide the single-row lanes that apply the same processors together
        (decoding.engine.row_batch); False decides every lane alone (the per-row reference, same records). `models`:
        opens the models lanes name (LaneSpec.model); None: a lane naming another model is refused."""
        check_int("top_n", top_n, MIN_TOP_N)
        Range(0.0, 1.0).check("near_tie_threshold", near_tie_threshold)
        self.source = source
        self.tokenizer = tokenizer
        self.eos_token_ids = [int(t) for t in eos_token_ids]
        self.top_n = top_n
        self.near_tie_threshold = near_tie_threshold
        self.critical = critical or CriticalSettings()
        self.batched_rows = batched_rows
        self.models = models

    def start(
        self,
        prompt: PromptInfo,
        specs: Sequence[LaneSpec],
        *,
        max_new_tokens: int,
        model: ModelInfo | None = None,
        provider: str = "",
        base_seed: int | None = None,
        prefix: Prefix | None = None,
        cancel: Cancel = None,
        on_prefill: PrefillCallback | None = None,
    ) -> Run:
        """Prepare a run (nothing is computed until it is iterated). ValueError for bad input, a run longer than
        the source's `max_positions` (a PositionLimit) included.

        `on_prefill(done, total)` is called on the iterating thread while the prompt is read: with 0 first, then
        after each chunk the source reads. A cancel (`cancel` or `Run.cancel()`) during the prefill stops it after
        the chunk being read; the lanes then end "cancelled" with no step. An exception raised by `on_prefill`
        ends the run as a failed prefill (trace.error)."""
        prefix = prefix or Prefix([])
        model = model or ModelInfo(name="unknown")
        check_run_inputs(prompt, specs, max_new_tokens, prefix)
        lane_models = self._lane_models(specs, model.name)
        if prefix.token_ids:
            _check_prefix_tokenizer(specs, model.name, lane_models, prefix.tokenizer)
        prompts = {name: lane_model.tokenizer.encode(prompt) for name, lane_model in lane_models.items()
                   if lane_model.tokenizer is not None}
        longest = max(spec.max_new_tokens or max_new_tokens for spec in specs)
        for name, source in [(None, self.source), *((n, m.source) for n, m in lane_models.items())]:
            limit = source.max_positions if isinstance(source, PositionLimit) else None
            check_positions(len(prompts.get(name, prompt.ids)), longest, limit)
        specs = assign_seeds(list(specs), base_seed)  # every sampled lane records a seed: replayable
        settings = RunSettings(self.top_n, self.near_tie_threshold, max_new_tokens, base_seed,
                               list(self.eos_token_ids), self.critical)
        trace = RunTrace(model=model, provider=provider, prompt=prompt, settings=settings)
        return Run(self, trace, list(specs), prefix, cancel, on_prefill, lane_models, prompts)

    def _lane_models(self, specs: Sequence[LaneSpec], run_model: str) -> dict[str, LaneModel]:
        """The models the lanes name besides the run's, each opened once; a ParameterError naming the lane, the
        model and why (not prepared: the prepared ones) for one that cannot run, before any work."""
        opened: dict[str, LaneModel] = {}
        for spec in specs:
            name = own_model(spec, run_model)
            if name is None or name in opened:
                continue
            if self.models is None:
                refuse_model(spec, "the run's model (this engine opens no other)")
            try:
                opened[name] = self.models(name)
            except LookupError as exc:
                refuse_model(spec, str(exc))
            if opened[name].tokenizer is not None:  # its own ids: any vocabulary
                continue
            vocab = opened[name].source.vocab_size
            if vocab != self.source.vocab_size:
                refuse_model(spec, f"a model of the run's vocabulary of {self.source.vocab_size} tokens (it has "
                              f"{vocab})")
        _check_branch_models(specs, run_model)
        return opened

    def tokenizer_of(self, spec: LaneSpec, run_model: str) -> str | None:
        """The identity of the tokenizer a lane's tokens are in (LaneModelInfo.tokenizer; None: the run's)."""
        name = own_model(spec, run_model)
        return None if name is None or self.models is None else self.models(name).info.tokenizer

    def run(
        self, prompt: PromptInfo, specs: Sequence[LaneSpec], *, on_step: StepCallback | None = None, **kwargs
    ) -> RunTrace:
        """Run to the end (or cancellation / source error), calling on_step(lane_index, record) per record."""
        run = self.start(prompt, specs, **kwargs)
        for lane_index, record in run:
            if on_step is not None:
                on_step(lane_index, record)
        return run.trace


def check_positions(prompt_tokens: int, max_new_tokens: int, max_positions: int | None) -> None:
    """ValueError unless a run fits in the model's positions (None: no known limit): the prompt's tokens and
    every new token but the last (its logits are never needed) each take one.

    >>> from decoding.engine.engine import check_positions
    >>> check_positions(8000, 193, 8192)
    >>> check_positions(9000, 1, 8192)
    Traceback (most recent call last):
    ...
    ValueError: invalid prompt: 9000 tokens, longer than the model's 8192 positions (allowed: at most 8192 tokens)
    """
    if not max_positions:
        return
    if prompt_tokens > max_positions:
        raise ValueError(f"invalid prompt: {prompt_tokens} tokens, longer than the model's {max_positions} positions "
                         f"(allowed: at most {max_positions} tokens)")
    needed = prompt_tokens + max_new_tokens - 1
    if needed > max_positions:
        raise ValueError(f"invalid max_new_tokens={max_new_tokens}: after the prompt's {prompt_tokens} tokens it "
                         f"needs {needed} positions, the model has {max_positions} (allowed: max_new_tokens <= "
                         f"{max_positions - prompt_tokens + 1})")


def own_model(spec: LaneSpec, run_model: str) -> str | None:
    """The model a lane runs on when it is not the run's (None: the run's)."""
    return None if spec.model in (None, run_model) else spec.model


def refuse_model(spec: LaneSpec, allowed: str) -> None:
    """A ParameterError for the lane's model, naming the lane and what is allowed (why the model cannot run)."""
    fail("model", spec.model, f"{allowed} (lane {spec.name!r})")


def _check_prefix_tokenizer(
    specs: Sequence[LaneSpec], run_model: str, lane_models: dict[str, LaneModel], tokenizer: str | None
) -> None:
    """A run continuing given tokens (a branch or replay from a step) needs lanes of the tokenizer they are in."""
    for spec in specs:
        name = own_model(spec, run_model)
        if (None if name is None else lane_models[name].info.tokenizer) != tokenizer:
            whose = "the run's" if tokenizer is None else "another"
            refuse_model(spec, "a model of the tokenizer of the tokens it continues (a branch or replay from a "
                         f"step of a lane of {whose} tokenizer)")


def _check_branch_models(specs: Sequence[LaneSpec], run_model: str) -> None:
    """A branch followed in the run forks its parent's KV row: it must be on its parent's model."""
    for spec in specs:
        parent = next((s for s in specs if spec.branch is not None and s.name == spec.branch.parent), None)
        if parent is not None and own_model(spec, run_model) != own_model(parent, run_model):
            refuse_model(spec, f"its parent {parent.name!r}'s model {parent.model or run_model!r} for a branch "
                          "made in the run (it continues the parent's rows)")


def check_run_inputs(prompt: PromptInfo, specs: Sequence[LaneSpec], max_new_tokens: int, prefix: Prefix) -> None:
    """The checks of a run that need no model (ValueError naming what is wrong): a window command makes them
    before it shows a lane, so a refused lane never appears."""
    if not prompt.ids:
        raise ValueError("invalid prompt: it encodes to no tokens (allowed: a non-empty prompt)")
    if not specs:
        raise ValueError("invalid lanes: none given (allowed: at least one lane)")
    parameter("max_new_tokens").check(max_new_tokens)
    if len(prefix.records) != len(prefix.token_ids):
        raise ValueError(f"invalid prefix: {len(prefix.token_ids)} tokens but {len(prefix.records)} records")
    if isinstance(prefix.draws, bool) or not isinstance(prefix.draws, int) or prefix.draws < 0:
        raise ValueError(f"invalid prefix draws={prefix.draws!r}: allowed an integer >= 0")
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"invalid lane names {names}: allowed distinct names")
    for spec in specs:
        limit = spec.max_new_tokens or max_new_tokens
        if len(prefix.token_ids) >= limit:
            raise ValueError(
                f"invalid prefix of {len(prefix.token_ids)} tokens for lane {spec.name!r}: allowed "
                f"fewer than its max_new_tokens={limit}"
            )
        if spec.branch is not None:
            _check_branch(spec, specs, limit, len(prefix.token_ids))
        replay = spec.replay_of
        if replay is not None and not len(prefix.token_ids) <= replay.step < limit:
            raise ValueError(
                f"invalid replay step={replay.step} of lane {spec.name!r}: allowed {len(prefix.token_ids)}..{limit - 1}"
            )


def _check_branch(spec: LaneSpec, specs: Sequence[LaneSpec], limit: int, prefix_len: int) -> None:
    branch = spec.branch
    if not prefix_len <= branch.step < limit:
        raise ValueError(f"invalid branch step={branch.step} of lane {spec.name!r}: allowed {prefix_len}..{limit - 1}")
    parents = [s for s in specs if s.name == branch.parent]
    if not parents:
        if branch.step != prefix_len:
            raise ValueError(
                f"invalid branch parent {branch.parent!r} of lane {spec.name!r}: allowed a lane of "
                "this run, or a run started with the parent's tokens as prefix (branch_prefix)"
            )
        return
    if not follows_in_run(spec, specs):
        raise ValueError(
            f"invalid branch parent {parents[0].name!r}: allowed a single-row lane that is not itself "
            "a branch (branch from beams or branches after the run, with branch_prefix)"
        )


@dataclass
class _ModelGroup:
    """The lanes on one model: its source, the prompt's ids it reads, its KV rows (`state`, after the prefill)
    and the lanes advancing on them; one batched `source.step` a step for all of them."""

    source: LogitsSource
    prompt_ids: list[int]
    lanes: list[LaneState]
    state: Any = None

    def batch(self, logits: np.ndarray, top_n: int) -> LogitsRowCache:
        """The new logits rows [rows, vocab] as float32, with the source's RowSummary of them when it makes one."""
        logits = np.asarray(logits, dtype=np.float32)
        top_k = max(top_n, WIDER_PREFIX)  # the statistics' top-N and a draw's wider prefix
        summary = self.source.summarize(logits, top_k) if isinstance(self.source, RowSummarizer) else None
        unseen = self.source.unseen_mass() if isinstance(self.source, PartialRows) else None
        return LogitsRowCache(logits, summary, unseen)

    def feed(self) -> list[tuple[int, int]]:
        """The (old row, token) pairs its running lanes queue for the next step."""
        feed: list[tuple[int, int]] = []
        for lane in self.lanes:
            lane.queue(feed)
        return feed

    def step(self, feed: list[tuple[int, int]], top_n: int) -> None:
        """Advance the fed rows in one call (none when nothing is fed) and hand each lane its new rows."""
        if not feed:
            self.state = None  # its lanes have ended (or still follow a parent): its KV rows are not needed
            for lane in self.lanes:
                lane.receive(None, [], 0)
            return
        rows, tokens, slots = _share_identical_rows(feed)
        self.state, logits = self.source.step(self.state, rows, tokens)
        batch = self.batch(logits, top_n)
        position = 0
        for lane in self.lanes:
            position = lane.receive(batch, slots, position)


class Run:
    """One run: iterate it to advance; `trace` fills as it goes; `cancel()` stops before the next step (during
    the prefill: before the next chunk of the prompt)."""

    def __init__(
        self,
        engine: Engine,
        trace: RunTrace,
        specs: list[LaneSpec],
        prefix: Prefix,
        cancel: Cancel,
        on_prefill: PrefillCallback | None = None,
        lane_models: dict[str, LaneModel] | None = None,
        prompts: dict[str, list[int]] | None = None,
    ) -> None:
        """`prompts`: the prompt's ids for each lane model of another tokenizer (by name)."""
        self.engine = engine
        self.trace = trace
        self.specs = specs
        self.prefix = prefix
        self._cancel_event = threading.Event()
        self._external_cancel = cancel
        self._on_prefill = on_prefill
        self.lane_models = lane_models or {}
        self.prompts = prompts or {}
        self.error: str | None = None
        self.lanes: list[LaneState] = []  # the lanes' states once iterated (step mode reads a beam lane's beams)
        self._started = False

    def cancel(self) -> None:
        """Stop before the next step; a source waiting on a server (InFlight) aborts its requests now."""
        self._cancel_event.set()
        for source in self.waiting_sources():
            source.cancel_in_flight()

    def waiting_sources(self) -> list[InFlight]:
        """The sources that wait on a server (the run's own and its lanes' models')."""
        sources = [self.engine.source, *(m.source for m in self.lane_models.values())]
        return [source for source in sources if isinstance(source, InFlight)]

    def _watch_external_cancel(self) -> threading.Event | None:
        """While sources wait on a server, an external cancel (the window's Stop sets an Event) aborts their
        requests at once, not after them: a thread polls it every 50 ms. Returns the event that ends it."""
        sources = self.waiting_sources()
        if not sources or self._external_cancel is None:
            return None
        done = threading.Event()

        def watch() -> None:
            while not done.wait(0.05):
                if self.cancelled():
                    for source in sources:
                        source.cancel_in_flight()
                    return

        threading.Thread(target=watch, name="served-cancel", daemon=True).start()
        return done

    def cancelled(self) -> bool:
        external = self._external_cancel
        if isinstance(external, threading.Event):
            return self._cancel_event.is_set() or external.is_set()
        return self._cancel_event.is_set() or bool(external is not None and external())

    def __iter__(self) -> Iterator[tuple[int, StepRecord]]:
        if self._started:
            raise RuntimeError("a run can be iterated once")
        self._started = True
        return self._loop()

    # ------------------------------------------------------------------------------------------- the loop

    def _loop(self) -> Iterator[tuple[int, StepRecord]]:
        t_start = time.perf_counter()
        lanes = self.lanes = self._make_lanes()
        self.trace.lanes = [lane.trace for lane in lanes]
        for lane in lanes:
            for record in self.prefix.records:
                lane.take_prefix(record)
                yield lane.index, lane.trace.steps[-1]
        groups = self._groups(lanes)
        watching = self._watch_external_cancel()
        try:
            prefill_ms = self._prefill(groups)
            if prefill_ms is None and self.error is None:
                self._stop_all(lanes, "cancelled")
            elif self.error is None:
                self.trace.timing.prefill_ms = prefill_ms
                yield from self._advance(lanes, groups, prefill_ms)
        finally:
            if watching is not None:
                watching.set()
        self._finish(lanes, t_start)

    def _make_lanes(self) -> list[LaneState]:
        lanes = [self._new_lane(index, spec) for index, spec in enumerate(self.specs)]
        names = [spec.name for spec in self.specs]
        for lane in lanes:
            lane.chain.selector.skip(self.prefix.draws)
            branch = lane.spec.branch
            if branch is not None and branch.parent in names:
                lane.following = lanes[names.index(branch.parent)]
            name = own_model(lane.spec, self.trace.model.name)
            if name is not None:
                lane.trace.model = replace(self.lane_models[name].info)
            elif self.trace.model.served:  # a run on a served model: each lane's top-N is its own to mark
                lane.trace.model = LaneModelInfo(**asdict(self.trace.model))
            if name in self.prompts:
                lane.trace.prompt_ids = list(self.prompts[name])
        return lanes

    def _new_lane(self, index: int, spec: LaneSpec) -> LaneState:
        """A lane's state, with its model's tokenizer, prompt ids and eos ids (the run's unless its own)."""
        engine = self.engine
        name = own_model(spec, self.trace.model.name)
        own = self.lane_models[name].tokenizer if name is not None else None
        return new_lane_state(
            index,
            spec,
            list(self.prompts.get(name, self.trace.prompt.ids)),
            self.prefix.token_ids,
            engine.eos_token_ids if own is None else list(own.eos_token_ids),
            self.trace.settings.max_new_tokens,
            engine.top_n,
            engine.tokenizer if own is None else own.text,
        )

    def _groups(self, lanes: list[LaneState]) -> list[_ModelGroup]:
        """One group per model, the run's first (lanes in the run's order within each)."""
        groups = {None: _ModelGroup(self.engine.source, list(self.trace.prompt.ids), [])}
        for name, lane_model in self.lane_models.items():
            groups[name] = _ModelGroup(lane_model.source, list(self.prompts.get(name, self.trace.prompt.ids)), [])
        for lane in lanes:
            groups[own_model(lane.spec, self.trace.model.name)].lanes.append(lane)
        return [group for group in groups.values() if group.lanes]

    def _prefill(self, groups: list[_ModelGroup]) -> float | None:
        """Each model reads the prompt (and prefix) into its own KV rows; its lanes start from its last logits
        row. Returns the time it took, None when cancelled or failed (self.error says which)."""
        prefix = list(self.prefix.token_ids)
        total = sum(len(group.prompt_ids) + len(prefix) for group in groups)
        started, before = time.perf_counter(), 0
        for group in groups:
            def progress(done: int, _total: int, before: int = before) -> bool:
                return self._prefill_progress(before + done, total)
            ids = group.prompt_ids + prefix
            before += len(ids)
            try:
                group.state, logits = group.source.prefill(ids, progress=progress)
                batch = group.batch(np.reshape(logits, (1, -1)), self.engine.top_n)
            except PrefillCancelled:
                return None
            except Exception as exc:  # noqa: BLE001 - a failing source ends the run with what it has
                if group.source is self.engine.source or self.cancelled():
                    self.error = None if self.cancelled() else f"prefill failed: {type(exc).__name__}: {exc}"
                    return None
                self._end_group(group, f"prefill failed: {type(exc).__name__}: {exc}")  # the others go on
                continue
            for lane in group.lanes:
                if lane.following is None:
                    lane.attach(batch, 0)
        return (time.perf_counter() - started) * 1000.0

    def _prefill_progress(self, done: int, total: int) -> bool:
        if self._on_prefill is not None:
            self._on_prefill(done, total)
        return self.cancelled()

    def _advance(
        self, lanes: list[LaneState], groups: list[_ModelGroup], step_ms: float
    ) -> Iterator[tuple[int, StepRecord]]:
        timing = self.trace.timing
        # followers after the others: at step s their parent has decided step s and still holds its logits
        order = [lane for lane in lanes if lane.following is None] + [
            lane for lane in lanes if lane.following is not None
        ]
        while True:
            together = self._decide_together(order, step_ms)
            for lane in order:
                if lane in together:
                    yield lane.index, lane.trace.steps[-1]
                elif lane.running:
                    yield from self._decide(lane, step_ms)
            feeds = [group.feed() for group in groups]
            if not any(feeds):
                self._fail_orphans(lanes)
                return
            if self.cancelled():
                self._stop_all(lanes, "cancelled")
                return
            started = time.perf_counter()
            try:
                for group, feed in zip(groups, feeds, strict=True):
                    self._step_group(group, feed)
            except Exception as exc:  # noqa: BLE001 - a failing source ends the run with what it has
                if self.cancelled():
                    self._stop_all(lanes, "cancelled")
                else:
                    self.error = f"step failed: {type(exc).__name__}: {exc}"
                    self._stop_all(lanes, "error")
                return
            step_ms = (time.perf_counter() - started) * 1000.0
            timing.steps += 1
            timing.tokens += sum(len(feed) for feed in feeds)

    def _step_group(self, group: _ModelGroup, feed: list[tuple[int, int]]) -> None:
        """One group's batched step. A lane model's source failing (a server gone, say) ends that model's lanes
        with its message, their steps kept, and the other lanes go on; the run's own source failing raises."""
        try:
            group.step(feed, self.engine.top_n)
        except Exception as exc:
            if group.source is self.engine.source:
                raise
            self._end_group(group, f"step {{step}} failed: {type(exc).__name__}: {exc}")
            for lane in group.lanes:
                lane.receive(None, [], 0)

    def _end_group(self, group: _ModelGroup, message: str) -> None:
        """A lane model's lanes end: cancelled when the run was, else with `message` (its {step}: the lane's)."""
        group.state = None
        for lane in group.lanes:
            if lane.running and self.cancelled():
                lane.stop("cancelled")
            elif lane.running:
                lane.fail(message.replace("{step}", str(lane.step)))

    def _decide_together(self, lanes: list[LaneState], step_ms: float) -> set[LaneState]:
        """With batched rows, decide the running single-row lanes that hold a usable row (not a beam, not a
        branch lane still following its parent) and share their processors with another in groups; returns
        them. The others decide one by one."""
        if not self.engine.batched_rows:
            return set()
        ready = [
            lane for lane in lanes
            if lane.running and lane.following is None and isinstance(lane, SingleRowLaneState)
            and lane.batch.problem(lane.rows[0]) is None
        ]
        return set(decide_together(ready, step_ms, self.engine.top_n))

    def _decide(self, lane: LaneState, step_ms: float) -> Iterator[tuple[int, StepRecord]]:
        """One lane's step: choose and record (a follower copies its parent until the branch step)."""
        parent = lane.following
        if parent is not None:
            if lane.step < lane.spec.branch.step:
                if parent.step > lane.step:
                    lane.copy_record(parent.trace.steps[lane.step], parent.tokens[lane.step])
                    yield lane.index, lane.trace.steps[-1]
                return
            if parent.batch is None or parent.step != lane.step + 1:
                return  # the parent ended before the branch step: _fail_orphans reports it
            lane.attach(parent.batch, parent.rows[0])
            lane.following = None
        problems = {lane.batch.problem(row) for row in lane.rows} - {None}
        if problems:  # a lane cannot choose from such a row; the other lanes go on
            lane.fail(f"the model's logits at step {lane.step} are not usable ({', '.join(sorted(problems))})")
            return
        for record in lane.decide(step_ms):
            yield lane.index, record

    def _fail_orphans(self, lanes: list[LaneState]) -> None:
        for lane in lanes:
            if lane.running and lane.following is not None:
                lane.fail(
                    f"parent {lane.following.spec.name!r} ended at step {lane.following.step}, before the "
                    f"branch step {lane.spec.branch.step}"
                )

    def _stop_all(self, lanes: list[LaneState], reason: str) -> None:
        for lane in lanes:
            if lane.running:
                lane.stop(reason)

    def _finish(self, lanes: list[LaneState], t_start: float) -> None:
        if self.error is not None:
            self._stop_all(lanes, "error")
        for lane in lanes:
            lane.close()
        timing = self.trace.timing
        timing.total_ms = (time.perf_counter() - t_start) * 1000.0
        generating_s = max(timing.total_ms - timing.prefill_ms, 1e-9) / 1000.0
        timing.tokens_per_s = timing.tokens / generating_s if timing.tokens else 0.0
        self.trace.error = self.error
        self.trace.analysis = analysis.analyze(self.trace)


def _share_identical_rows(feed: list[tuple[int, int]]) -> tuple[list[int], list[int], list[int]]:
    """Rows that continue the same old row with the same token have the same future: compute each once.
    Returns the batch's (rows, tokens) and, for every fed pair, its row in the new batch."""
    unique: dict[tuple[int, int], int] = {}
    slots = [unique.setdefault(pair, len(unique)) for pair in feed]
    return [row for row, _ in unique], [token for _, token in unique], slots
