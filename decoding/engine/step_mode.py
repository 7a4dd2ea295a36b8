"""Step mode: lanes advanced one token at a time, the user deciding each lane's token.

A StepSession holds each lane's steps so far. `propose(lane)` computes the lane's next step: a one-step run of
its spec from its tokens so far (decoding.engine.engine.Prefix: the prompt and those tokens prefilled once, their
records copied, a sampled lane's generator past the draws it made), whose record shows the lane's processed
distribution and its own pick. `accept(lane)` keeps that pick; `take(lane, token_id)` takes another candidate
instead (a forced token: the record says `forced`, its top lists give the rank it had); `run_to_end(lane)`
lets the lane go on by itself. `spec_of(lane)` is the lane's spec with the user's tokens as forced steps: a run
of it from step 0 makes exactly the same tokens (a forced step draws nothing, so every accepted sampled step
draws what it drew here).

A beam lane keeps several hypotheses, which a one-sequence prefix cannot hold: it is one ordinary run of its
spec, paused after each step (a BeamWalk), so every step it takes is the uninterrupted run's. Its proposed step
is the search's next step (`beams(lane)`: every beam it extended, with that beam's candidates); it is accepted
or run on, never forced (a forced token would leave the search: branch from the beam lane instead).
`kept(lane)` is what a lane keeps when step mode ends: a beam lane stopped early becomes the search with that
many tokens, so that a replay makes it again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from decoding.chain.chain import uniforms_drawn
from decoding.chain.spec import LaneSpec, assign_seeds
from decoding.engine.engine import Engine, Prefix, Run
from decoding.engine.lane_state import BeamLaneState, BeamParent, empty_trace
from decoding.records.trace import LaneTrace, ModelInfo, PromptInfo, StepRecord


@dataclass
class BeamWalk:
    """A beam lane's run, paused after each of its steps."""

    run: Run
    records: Iterator[tuple[int, StepRecord]]

    @property
    def state(self) -> BeamLaneState:
        return self.run.lanes[0]

    @property
    def ended(self) -> bool:
        return self.run.trace.lanes[0].finish_reason is not None

    def advance(self) -> None:
        """One step of the search (the run's end too, when that step ended it)."""
        next(self.records, None)
        if not self.state.running:
            next(self.records, None)  # closes the run: the best final sequence becomes the lane's steps

    def finish(self) -> LaneTrace:
        for _ in self.records:
            pass
        return self.run.trace.lanes[0]

    def shown(self, decode) -> LaneTrace:
        """The lane so far: the best running beam's steps (the final best sequence once ended)."""
        if self.ended:
            return self.run.trace.lanes[0]
        state = self.state
        path = state.trace.steps[: state.prefix_len] + (state.beam_records[0] if state.beam_records else [])
        tokens = [record.token_id for record in path]
        return replace(state.trace, steps=[replace(r) for r in path], token_ids=tokens, text=decode(tokens))


@dataclass
class SteppedLane:
    spec: LaneSpec  # as the user made it (its own forced steps included), its seed pinned
    limit: int  # its max_new_tokens
    trace: LaneTrace | None = None  # the steps taken so far (None before the first)
    picks: dict[int, int] = field(default_factory=dict)  # step -> token the user took instead of the lane's
    proposal: LaneTrace | None = None  # the one-step run whose last record is the lane's next step
    walk: BeamWalk | None = None  # a beam lane's run, one step ahead of `trace` while a step is proposed
    beams: list[BeamParent] = field(default_factory=list)  # a beam lane's beams at its last computed step

    @property
    def steps(self) -> list[StepRecord]:
        return [] if self.trace is None else self.trace.steps

    @property
    def ended(self) -> bool:
        return self.trace is not None and self.trace.finish_reason is not None


class StepSession:
    def __init__(self, engine: Engine, prompt: PromptInfo, specs: Sequence[LaneSpec], *, max_new_tokens: int,
                 base_seed: int | None = None, model: ModelInfo | None = None) -> None:
        """ValueError for a lane with a branch or replay marker (step mode starts every lane at step 0)."""
        for spec in specs:
            if spec.branch is not None or spec.replay_of is not None:
                raise ValueError(f"lane {spec.name!r} branches from another lane: step mode starts lanes at step 0")
        self.engine, self.prompt, self.base_seed = engine, prompt, base_seed
        self.model = model or ModelInfo("unknown")
        self.max_new_tokens = max_new_tokens
        specs = assign_seeds(list(specs), base_seed)  # every one-step run of a sampled lane draws from one seed
        self.lanes = {spec.name: SteppedLane(spec, spec.max_new_tokens or max_new_tokens) for spec in specs}

    # ---- reading -----------------------------------------------------------------------------------------
    def lane(self, name: str) -> SteppedLane:
        if name not in self.lanes:
            raise KeyError(f"no lane named {name!r} in step mode")
        return self.lanes[name]

    def spec_of(self, name: str) -> LaneSpec:
        """The lane's spec with the user's tokens forced: run from step 0 it makes the same tokens."""
        lane = self.lane(name)
        return replace(lane.spec, forced={**lane.spec.forced, **lane.picks})

    def proposed(self, name: str) -> StepRecord | None:
        """The lane's next step as proposed (its distribution, its own pick), or None."""
        proposal = self.lane(name).proposal
        return None if proposal is None else proposal.steps[-1]

    def beams(self, name: str) -> list[BeamParent]:
        """A beam lane's beams at its last computed step, each with its candidates; [] for other lanes."""
        return list(self.lane(name).beams)

    def shown(self, name: str) -> LaneTrace:
        """The lane as the window shows it: the steps taken, then the proposed next step (if computed)."""
        lane = self.lane(name)
        shown = lane.proposal or lane.trace
        if shown is None:
            return replace(empty_trace(self.spec_of(name)))
        return replace(shown, steps=list(shown.steps), token_ids=list(shown.token_ids))

    def running(self) -> list[str]:
        return [name for name, lane in self.lanes.items() if not lane.ended]

    def kept(self, name: str) -> tuple[LaneSpec, LaneTrace] | None:
        """What the lane keeps when step mode ends (None: no step taken): its spec with the picks forced and its
        steps taken; stopped early, its spec's length is the steps taken, so that a replay makes them again (a
        beam lane: the search with that many tokens, made now, whose best sequence may differ from the best
        running beam's)."""
        lane = self.lane(name)
        if lane.trace is None:
            return None
        spec, taken = self.spec_of(name), lane.trace
        if taken.finish_reason is None:
            spec = replace(spec, max_new_tokens=len(taken.steps))
            if lane.walk is not None:
                return spec, self._alone(spec)
            taken = replace(taken, finish_reason="length", config=spec.to_config())
        return spec, replace(taken, steps=list(taken.steps), token_ids=list(taken.token_ids))

    # ---- stepping ----------------------------------------------------------------------------------------
    def propose(self, name: str) -> StepRecord | None:
        """Compute the lane's next step (once: a second call returns the same); None when the lane has ended."""
        lane = self.lane(name)
        if lane.ended:
            return None
        if lane.proposal is None:
            lane.proposal = self._next_beam_step(lane) if lane.spec.is_beam else self._one_step(lane, {})
        if lane.spec.is_beam:
            return lane.proposal.steps[-1] if lane.proposal.steps else None
        return lane.proposal.steps[-1] if len(lane.proposal.steps) > len(lane.steps) else None

    def accept(self, name: str) -> StepRecord | None:
        """Keep the lane's own pick at its next step."""
        if self.propose(name) is None:
            return None
        lane = self.lane(name)
        lane.trace, lane.proposal = lane.proposal, None
        return lane.steps[-1]

    def take(self, name: str, token_id: int) -> StepRecord | None:
        """Take `token_id` at the lane's next step instead of its own pick (a forced step). ValueError for a
        beam lane (its step is the search's: accepted or run on)."""
        if self.lane(name).spec.is_beam:
            raise ValueError(f"lane {name!r} is a beam lane: in step mode its step is accepted or run on")
        record = self.propose(name)
        if record is None:
            return None
        lane = self.lane(name)
        if token_id == record.token_id and not record.forced:
            return self.accept(name)
        step = len(lane.steps)
        lane.trace, lane.proposal = self._one_step(lane, {step: int(token_id)}), None
        lane.picks[step] = int(token_id)
        lane.trace.config = self.spec_of(name).to_config()
        return lane.steps[-1]

    def step_all(self) -> list[StepRecord]:
        """Accept every running lane's own pick."""
        return [record for name in self.running() for record in [self.accept(name)] if record is not None]

    def run_to_end(self, name: str) -> LaneTrace:
        """Let the lane go on by itself from where it is to its end."""
        lane = self.lane(name)
        if lane.ended:
            return lane.trace
        if lane.spec.is_beam:
            lane.trace = self._walk(lane).finish()
        else:
            lane.trace = self._run(lane, {}, lane.limit)
        lane.proposal = None
        return lane.trace

    # ---- internals ---------------------------------------------------------------------------------------
    def _one_step(self, lane: SteppedLane, forced: dict[int, int]) -> LaneTrace:
        return self._run(lane, forced, len(lane.steps) + 1)

    def _walk(self, lane: SteppedLane) -> BeamWalk:
        if lane.walk is None:
            run = self.engine.start(self.prompt, [lane.spec], max_new_tokens=self.max_new_tokens,
                                    base_seed=self.base_seed, model=self.model)
            lane.walk = BeamWalk(run, iter(run))
        return lane.walk

    def _next_beam_step(self, lane: SteppedLane) -> LaneTrace:
        walk = self._walk(lane)
        walk.advance()
        if walk.run.error:
            raise RuntimeError(walk.run.error)
        lane.beams = walk.state.parents()
        return walk.shown(walk.state.tokenizer.decode)  # the lane model's tokenizer

    def _alone(self, spec: LaneSpec) -> LaneTrace:
        """An ordinary run of `spec` from step 0."""
        run = self.engine.run(self.prompt, [spec], max_new_tokens=self.max_new_tokens, base_seed=self.base_seed,
                              model=self.model)
        if run.error:
            raise RuntimeError(run.error)
        return run.lanes[0]

    def _run(self, lane: SteppedLane, forced: dict[int, int], limit: int) -> LaneTrace:
        """The lane run from its steps so far to `limit` tokens, `forced` taken besides its own forced steps."""
        steps = lane.steps
        draws = uniforms_drawn(steps)
        spec = self.spec_of(lane.spec.name)
        tokenizer = self.engine.tokenizer_of(spec, self.model.name) if steps else None
        prefix = Prefix([r.token_id for r in steps], [replace(r) for r in steps], draws, tokenizer) if steps else None
        spec = replace(spec, forced={**spec.forced, **forced}, max_new_tokens=limit)
        run = self.engine.run(self.prompt, [spec], max_new_tokens=limit, base_seed=self.base_seed,
                              model=self.model, prefix=prefix)
        if run.error:
            raise RuntimeError(run.error)
        trace = run.lanes[0]
        trace.config = self.spec_of(lane.spec.name).to_config()
        if trace.finish_reason == "length" and limit < lane.limit:
            trace.finish_reason = None  # the one-step run's own length: the lane goes on
        return trace
