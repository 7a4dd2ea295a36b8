"""Temperature sweeps: how one step's distribution changes with temperature, and how a whole run's fan-outs
grow more diverse with it.

A step sweep needs that step's raw logits row, which a run does not store (49 152 floats per step). The
caller gets it by running the model once: `sweep_inputs` names the token ids to prefill (the prompt and the
lane's tokens before the step); the last logits row of that call is the step's raw logits. `temperature_sweep`
then puts the row through the lane's own processors with the temperature replaced, at each temperature, and
summarises each result as a StepRecord does (decoding.records.stats.distribution). T = 0 means argmax: a one-hot
distribution on the token the lane's processors rank first. The sweep, not the logits, is stored in the run
(RunTrace.sweeps).

`temperature_fanouts` builds fan-outs of one lane at several temperatures (same seeds, so the members differ
by temperature only); `diversity_by_temperature` reads their diversity numbers back from a run's analysis, with
the members' mean pairwise edit distance, which still separates temperatures once every member differs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from decoding.analysis.fanout import fan_out, mean_pairwise_edit_distance
from decoding.chain.chain import stages_of
from decoding.chain.parameters import Strategies, parameter
from decoding.chain.processors import apply_processors
from decoding.chain.spec import LaneSpec, assign_seeds, lane_spec
from decoding.records.stats import Softmax, distribution
from decoding.records.trace import RunTrace, SweepPoint, TemperatureSweep

DEFAULT_TEMPERATURES = tuple(round(0.1 * i, 1) for i in range(21))  # 0, 0.1, ..., 2.0
SWEEP_TOP_N = 10  # tokens recorded per temperature: enough to draw the distribution's shape


@dataclass(frozen=True)
class SweepInputs:
    """What a sweep of lane `lane`'s step `step` needs besides the step's raw logits row: run the model once
    on `ids` (prefill) and pass its last logits row to `temperature_sweep`."""

    lane: str
    step: int
    token_id: int  # the token the lane chose at `step`
    ids: list[int]  # the prompt's ids and the lane's tokens before `step`
    prompt_len: int
    spec: LaneSpec
    eos_token_ids: list[int]


def sweep_inputs(trace: RunTrace, lane: str, step: int) -> SweepInputs:
    """What a sweep of `lane`'s `step` needs; a branch lane's steps before its branch step are its parent's
    (copied), so they are swept through the parent's processors."""
    found = trace.lane(lane)
    if not 0 <= step < len(found.steps):
        raise ValueError(f"invalid sweep step={step}: allowed 0..{len(found.steps) - 1} for lane {lane!r}")
    if found.branch and step < found.branch["step"]:
        parent = found.branch["parent"]
        if parent not in {other.name for other in trace.lanes}:
            raise ValueError(f"invalid sweep step={step} of lane {lane!r}: it copies lane {parent!r}, not in this run")
        return replace(sweep_inputs(trace, parent, step), lane=lane)
    prompt = list(trace.prompt.ids if found.prompt_ids is None else found.prompt_ids)  # its own tokenizer's
    return SweepInputs(
        lane=lane,
        step=step,
        token_id=found.token_ids[step],
        ids=prompt + list(found.token_ids[:step]),
        prompt_len=len(prompt),
        spec=lane_spec(found),
        eos_token_ids=list(trace.settings.eos_token_ids),
    )


def check_temperatures(temperatures: Sequence[float]) -> list[float]:
    values = list(temperatures)
    valid = all(isinstance(t, int | float) and not isinstance(t, bool) and 0.0 <= t < np.inf for t in values)
    if not values or not valid:
        raise ValueError(f"invalid temperatures={values!r}: allowed one or more floats >= 0 (0: argmax)")
    return [float(t) for t in values]


def processed_at(logits: np.ndarray, inputs: SweepInputs, temperature: float) -> np.ndarray:
    """The step's processed scores (one row, -inf = filtered) under the lane's processors at `temperature`
    (0: one-hot on the token they rank first, lowest id on ties)."""
    spec = inputs.spec
    scores = np.asarray(logits, dtype=np.float32).reshape(1, -1)
    if spec.is_beam:  # beam lanes put log-probabilities through their processors, as transformers does
        scores = Softmax.of(scores[0]).log_softmax()[None]
    ids = np.asarray([inputs.ids], dtype=np.int64)
    if temperature == 0.0:
        ranked = apply_processors(_chain(spec, inputs, None), ids, scores)[0]
        one_hot = np.full_like(ranked, -np.inf)
        one_hot[int(np.argmax(ranked))] = 0.0
        return one_hot
    return apply_processors(_chain(spec, inputs, temperature), ids, scores)[0]


def _chain(spec: LaneSpec, inputs: SweepInputs, temperature: float | None) -> list:
    """The lane's processors with its temperature replaced (None: no temperature). A greedy or beam lane gets
    the temperature as a sampled lane would (its other processors are penalties: they apply either way)."""
    values = {**spec.values(), "do_sample": spec.do_sample or temperature is not None, "temperature": temperature}
    order = spec.processor_order
    if order is not None and "temperature" not in order:  # before the first warper, where transformers has it
        warpers = [i for i, name in enumerate(order) if parameter(name).applies_to is Strategies.SAMPLING]
        at = warpers[0] if warpers else len(order)
        order = (*order[:at], "temperature", *order[at:])
    return stages_of(values, inputs.prompt_len, inputs.eos_token_ids, spec.num_beams, order)


def temperature_sweep(
    logits: np.ndarray,
    inputs: SweepInputs,
    temperatures: Sequence[float] = DEFAULT_TEMPERATURES,
    top_n: int = SWEEP_TOP_N,
    text: Callable[[int], str] = str,
) -> TemperatureSweep:
    """The step's processed distribution at each temperature: the chosen token's probability, entropy, kept-set
    size, top-1 − top-2 margin and top `top_n` tokens (`text` names them)."""
    points = []
    for temperature in check_temperatures(temperatures):
        found = distribution(processed_at(logits, inputs, temperature), inputs.token_id, top_n, text)
        points.append(SweepPoint(temperature, found.prob, found.entropy, found.kept, found.margin, found.top))
    return TemperatureSweep(inputs.lane, inputs.step, inputs.token_id, points)


# ------------------------------------------------------------------------------------ diversity of a run


@dataclass(frozen=True)
class DiversityPoint:
    """One fan-out's diversity numbers (decoding.analysis.fanout) at its temperature."""

    temperature: float
    group: str
    members: int
    distinct_continuations: int
    mean_first_split_step: float | None
    mean_pairwise_divergence_step: float | None
    mean_edit_distance: float | None  # tokens between two members' continuations, on average over pairs


def temperature_fanouts(
    spec: LaneSpec, temperatures: Sequence[float], count: int, base_seed: int | None = None
) -> list[LaneSpec]:
    """Fan-outs of `count` members of sampled lane `spec` at each temperature (> 0), groups named
    "<lane> · T <t>". Every group has the lane's seed (auto: assigned from the lane's name), so member k draws
    the same numbers at every temperature."""
    (seeded,) = assign_seeds([spec], base_seed)
    specs = []
    for temperature in check_temperatures(temperatures):
        group = seeded.with_changes(name=f"{spec.name} · T {temperature:g}", temperature=temperature)
        specs.extend(fan_out(group, count))
    return specs


def diversity_by_temperature(trace: RunTrace) -> list[DiversityPoint]:
    """Every fan-out of the run (its analysis) with its members' temperature (1.0 when unset), by temperature."""
    points = []
    for group, found in (trace.analysis.fanouts if trace.analysis else {}).items():
        config = trace.lane(found.members[0]).config
        points.append(DiversityPoint(
            temperature=float(config.get("temperature") or 1.0),
            group=group,
            members=len(found.members),
            distinct_continuations=found.distinct_continuations,
            mean_first_split_step=found.mean_first_split_step,
            mean_pairwise_divergence_step=found.mean_pairwise_divergence_step,
            mean_edit_distance=mean_pairwise_edit_distance([trace.lane(name).token_ids for name in found.members]),
        ))
    return sorted(points, key=lambda point: point.temperature)
