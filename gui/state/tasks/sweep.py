"""Temperature sweep: how a lane's distribution at one step changes with temperature (0 to 2), through its own
processors (the model recomputes that step's logits once; the sweep is stored with the run); and temperature
fan-outs: lanes that run a sampled lane as fan-outs of the same seeds at several temperatures (no model work:
the next run shows how diversity grows with temperature)."""

from __future__ import annotations

from dataclasses import replace

from decoding.analysis import fanout
from decoding.analysis.sweep import sweep_inputs, temperature_sweep
from decoding.chain.spec import assign_seeds, lane_spec, unique_name
from decoding.engine.engine import own_model
from decoding.records.trace import RunTrace, TemperatureSweep
from gui.i18n import translate
from gui.state.model_holder import ModelHolder
from gui.state.run_state import RunState
from gui.state.tasks.base import Desk, Task
from gui.state.tasks.kind import TaskKind
from gui.state.tasks.messages import Cancelled, Emit, ProviderMessage


class SweepTask(Task):
    kind = TaskKind("sweep", streams_tokens=False)

    def __init__(self, holder: ModelHolder, trace: RunTrace, lane: str, step: int, limit: int = 0) -> None:
        """ValueError (in words) when the step cannot be swept."""
        self.holder, self.trace, self.lane = holder, trace, lane
        self.inputs = sweep_inputs(trace, lane, step)
        self.targets, self.limit = {}, limit

    def work(self, emit: Emit, _cancelled: Cancelled) -> TemperatureSweep:
        """One prefill of the prompt and the lane's tokens before the step, on the lane's model, gives its raw
        logits (exactly the run's), which go through the lane's processors at each temperature."""
        holder, trace, inputs = self.holder, self.trace, self.inputs
        model = holder.get()
        emit(ProviderMessage(model.provider))
        own = own_model(lane_spec(trace.lane(self.lane)), trace.model.name)
        lane_model = None if own is None else holder.engine().models(own)
        source, tokenizer = model.decoder, model.tokenizer
        if lane_model is not None:
            source = lane_model.source
        if lane_model is not None and lane_model.tokenizer is not None:  # a model of another tokenizer
            tokenizer = lane_model.tokenizer.text
            inputs = replace(inputs, eos_token_ids=list(lane_model.tokenizer.eos_token_ids))
        _state, logits = source.prefill(inputs.ids)
        return temperature_sweep(logits, inputs, text=tokenizer.piece)

    def finished(self, state: RunState, result: TemperatureSweep) -> None:
        state.clear_notice("sweep")  # a refused sweep's words no longer hold
        state.add_sweep(result)
        state.set_status(translate("controller", "temperature sweep of {lane} step {step}").format(lane=result.lane,
                                                                                                   step=result.step))


def prepare(desk: Desk, index: int, step: int) -> SweepTask | None:
    state = desk.state
    if desk.busy() or state.trace is None or desk.holder is None:
        state.show_notice(translate("controller", "A temperature sweep needs a finished run and a model."),
                          cause="sweep")
        return None
    lane = state.lanes[index]
    if lane.members:
        state.show_notice(translate("controller", "“{name}” runs as a fan-out: sweep a step of a lane without one.")
                          .format(name=lane.name), level="info", cause="sweep")
        return None
    try:
        return SweepTask(desk.holder, state.shown_trace(), lane.name, step, state.run_limit)
    except ValueError as error:
        state.show_notice(translate("controller", "Cannot sweep: {error}.").format(error=error), cause="sweep")
        return None


def add_temperature_fanouts(desk: Desk, index: int, temperatures=(0.3, 0.7, 1.0, 1.5), count: int = 8) -> bool:
    """Lanes that run lane `index` as fan-outs of `count` seeds at each temperature (the same seeds at every
    temperature): after the next run, how diversity grows with temperature."""
    state = desk.state
    lane = state.lanes[index]
    if desk.busy() or fanout.refusal(lane.spec):
        state.show_notice(translate("controller", "Temperature fan-outs need a sampled lane: {refusal}.")
                          .format(refusal=fanout.refusal(lane.spec)), level="info")
        return False
    seed = lane.trace.config.get("seed") if lane.spec.seed is None else lane.spec.seed
    (base,) = assign_seeds([replace(lane.spec, seed=seed, fanout=None)], None)  # one seed for every temperature
    for offset, temperature in enumerate(temperatures, start=1):
        name = unique_name(f"T {temperature:g} ×{count}", state.names())
        state.insert_lane(index + offset, replace(base, name=name, temperature=temperature), fanout=count,
                          named_by_user=True)
    state.set_status(translate("controller", "added {len} temperature fan-outs of “{name}”: Run to compare them")
                     .format(len=len(temperatures), name=lane.name))
    return True
