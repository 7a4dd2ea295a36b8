"""Explain: what a lane does inside the model. Its sequence (the prompt, then its tokens; the first
MAX_EXPLAIN_TOKENS when longer, said in a notice) goes through the model's inspection model (attention of every
layer and head, logit lens), prepared first when needed; the result is stored with the run, and one already
stored is shown without the model."""

from __future__ import annotations

from pathlib import Path

from decoding.records.explain import MAX_EXPLAIN_TOKENS, ExplainResult, explain_span, with_start_token
from gui.i18n import QT_TRANSLATE_NOOP, translate
from gui.state.model_holder import ModelHolder
from gui.state.run_state import RunState
from gui.state.tasks.base import Desk, Task, stopped_before_work
from gui.state.tasks.kind import TaskKind
from gui.state.tasks.messages import Cancelled, Emit, StatusMessage


class ExplainTask(Task):
    kind = TaskKind("explain", counts_steps=False, streams_tokens=False,
                    busy_text=QT_TRANSLATE_NOOP("status", "explaining…"))
    failure = QT_TRANSLATE_NOOP("controller", "Could not explain the lane: {message}.")

    def __init__(self, holder: ModelHolder, token_ids: list[int], prompt_length: int, limit: int) -> None:
        self.holder, self.token_ids, self.prompt_length = holder, token_ids, prompt_length
        self.targets, self.limit = {}, limit

    def work(self, emit: Emit, cancelled: Cancelled) -> ExplainResult | None:
        """The sequence through the model's inspection model, opened once per model (None: stopped before the
        model ran)."""
        holder = self.holder
        if not holder.explainer_open:
            text = translate("jobs", "opening the inspection model of {model} (once per model)…")
            emit(StatusMessage(text.format(model=holder.name)))
        explainer = holder.explainer()
        if cancelled():
            return None
        text = translate("jobs", "explaining {count} tokens: attention of every layer and head, logit lens…")
        emit(StatusMessage(text.format(count=len(self.token_ids))))
        return explainer.explain(self.token_ids, self.prompt_length)

    def finished(self, state: RunState, result: ExplainResult | None) -> None:
        if result is None:
            stopped_before_work(state)
            return
        state.add_explanation(result)
        state.set_status(translate("controller", "explained {len} tokens ({layers} layers × {heads} heads): see the "
                                                 "Attention and Logit lens tabs")
                         .format(len=len(result.tokens), layers=result.layers, heads=result.heads))



def prepare(desk: Desk, index: int) -> ExplainTask | bool | None:
    """The explanation of lane `index`; True when one is stored already (then shown: no model needed); None
    when refused (with a notice)."""
    state = desk.state
    lane = state.lanes[index] if 0 <= index < len(state.lanes) and state.trace is not None else None
    if desk.busy() or lane is None or not lane.trace.token_ids:
        state.show_notice(translate("controller", "Explaining needs a lane of a finished run: run or open one, then "
                                                  "pick a lane."), level="info")
        return None
    if lane.trace.model is not None:  # the inspection model is the run model's export
        text = translate("controller", "“{name}” ran on {model}: Explain looks inside the run's model only ({run}).")
        state.show_notice(text.format(name=lane.name, model=lane.trace.model.name, run=state.trace.model.name),
                          level="info")
        return None
    stored = state.explanation(index)
    sequence = len(state.trace.prompt.ids) + len(lane.trace.token_ids)
    if stored is not None and len(stored.tokens) == min(sequence, MAX_EXPLAIN_TOKENS):
        return _shown(state, lane.name)  # no model needed
    if desk.holder is None:
        state.show_notice(translate("controller", "Explaining “{name}” needs the model it was made with: choose it in "
                                                  "the Model list.").format(name=lane.name))
        return None
    if not desk.use_model_of(state.trace):
        return None
    prompt = list(state.trace.prompt.ids)
    if not state.trace.prompt.chat:  # a plain prompt's first word would be the attention sink: see the view
        prompt = with_start_token(prompt, desk.holder.start_token_id())
    try:
        ids = explain_span(prompt, lane.trace.token_ids, desk.holder.max_positions())
    except ValueError as error:
        state.show_notice(translate("controller", "Cannot explain “{name}”: the prompt: {error}.").format(
            name=lane.name, error=error))
        return None
    if stored is not None and stored.token_ids == ids:  # as far as this model's positions go
        return _shown(state, lane.name)
    if not _inspection_ready(desk, lane.name):
        return None
    if len(ids) < sequence:
        state.show_notice(
            translate("controller", "Explaining the first {len} of “{name}”'s {sequence} tokens (prompt included): "
                                    "explain takes at most {len2}, as attention weights grow as tokens squared.")
            .format(len=len(ids), name=lane.name, sequence=sequence, len2=len(ids)), level="info", cause="explain")
    return ExplainTask(desk.holder, ids, len(prompt), state.run_limit)


def _shown(state: RunState, name: str) -> bool:
    """The lane's explanation is stored already: said, and no task."""
    state.set_status(translate("controller", "“{name}” is explained: see the Attention and Logit lens tabs")
                     .format(name=name))
    return True


def _inspection_ready(desk: Desk, lane: str) -> bool:
    """The model's inspection model is prepared, or gets prepared now (a notice says why not)."""
    from models.inspection import inspection_is_prepared, source_weights

    path = desk.holder.path
    if inspection_is_prepared(path):
        return True
    try:
        source_weights(Path(path).resolve())
    except FileNotFoundError as error:
        desk.state.show_notice(translate("controller", "“{lane}” cannot be explained: its inspection model is built "
                                                       "from the float32 weights the model was exported from, and "
                                                       "{error}. Prepare the model from its GGUF (the default model) "
                                                       "or from a local Hugging Face folder.")
                               .format(lane=lane, error=error))
        return False
    if desk.prepare_inspection is None:
        why = "its inspection model is not prepared (python main.py explain prepares it)"
    else:
        why = desk.prepare_inspection(path)
    if why is None:
        return True
    desk.state.show_notice(translate("controller", "“{lane}” was not explained: {why}.").format(lane=lane, why=why))
    return False
