"""Model comparison: a lane's tokens read by a second prepared model and by the run's own, teacher-forced (one
prefill of the whole sequence each: per-step KL, top-1 agreement, change in p(chosen)), then each model's
free-running greedy continuation of the prompt; shown in the Model comparison view. Refused with a notice
(nothing changes) without a finished lane, a prepared model or the same tokenizer."""

from __future__ import annotations

from pathlib import Path

from decoding.chain.spec import parse_lane
from decoding.records.trace import RunTrace
from gui.i18n import QT_TRANSLATE_NOOP, translate
from gui.state.model_comparison import ModelComparison, compared_rows, comparison_of, side_of
from gui.state.model_holder import ModelHolder
from gui.state.run_state import RunState
from gui.state.tasks.base import Desk, Task, stopped_before_work
from gui.state.tasks.kind import TaskKind
from gui.state.tasks.messages import Cancelled, Emit, StatusMessage

COMPARE_STAGES = (  # each for model A, then model B
    QT_TRANSLATE_NOOP("jobs", "{lane}'s tokens through {model}"),
    QT_TRANSLATE_NOOP("jobs", "free-running greedy of {model}"),
)


class ModelCompareTask(Task):
    kind = TaskKind("model_compare", counts_steps=False, streams_tokens=False,
                    busy_text=QT_TRANSLATE_NOOP("status", "comparing models…"))
    failure = QT_TRANSLATE_NOOP("controller", "Could not compare the models: {message}.")

    def __init__(self, holder: ModelHolder, other: Path, trace: RunTrace, lane_key: int, lane_name: str,
                 limit: int) -> None:
        self.holder, self.other, self.trace, self.lane_key, self.lane_name = holder, other, trace, lane_key, lane_name
        self.token_ids = list(trace.lane(lane_name).token_ids)
        self.targets, self.limit = {}, limit

    def work(self, emit: Emit, cancelled: Cancelled) -> ModelComparison | None:
        """A ModelComparison; None when stopped."""
        holder, other, trace = self.holder, self.other, self.trace
        sides = (side_of(holder.path), side_of(other))

        def stage(index: int) -> None:
            words = translate("jobs", COMPARE_STAGES[index // 2]).format(lane=f"“{self.lane_name}”",
                                                                        model=sides[index % 2].name)
            emit(StatusMessage(translate("jobs", "comparing models ({done}/4): {stage}…").format(done=index + 1,
                                                                                             stage=words)))

        layers: list = []
        logits = compared_rows(*(lambda p=p: scorer_with_layers(p, holder.device) for p in (holder.path, other)),
                               trace.prompt.ids, self.token_ids, cancelled, stage, layers)
        greedy = None if logits is None else _greedy_pair(holder, other, trace, cancelled, stage)
        if greedy is None:
            return None
        return comparison_of(self.lane_key, self.lane_name, sides, logits, self.token_ids, holder.tokenizer().piece,
                             greedy, layers)

    def finished(self, state: RunState, result: ModelComparison | None) -> None:
        if result is None:
            stopped_before_work(state)
            return
        state.set_model_comparison(result)
        state.set_status(translate("controller", "compared “{lane}” with {model}: see the Model comparison tab")
                         .format(lane=result.lane_name, model=result.other.name))



def scorer_with_layers(path: Path, device: str):
    """A SequenceScorer that also returns each layer's output (for the per-layer chart), or without them when
    the model's graph does not name its layers as optimum's export does."""
    from runtime.sequence_logits import SequenceScorer

    try:
        return SequenceScorer(path, device, layers=True)
    except ValueError:
        return SequenceScorer(path, device)


def prepare(desk: Desk, index: int, other: str | Path) -> ModelCompareTask | None:
    """Lane `index`'s tokens read by `other` (a prepared model's name or folder), or None with a notice."""
    state, holder = desk.state, desk.holder
    lane = state.lanes[index] if 0 <= index < len(state.lanes) and state.trace is not None else None
    if desk.busy() or lane is None or not lane.trace.token_ids or holder is None:
        state.show_notice(translate("controller", "Comparing with another model needs a lane of a finished run and "
                                                  "its model: run, then pick a lane."), level="info")
        return None
    if lane.members:
        state.show_notice(translate("controller", "“{name}” runs as a fan-out: compare a lane without one.")
                          .format(name=lane.name), level="info")
        return None
    if lane.trace.prompt_ids is not None:
        text = translate("controller", "“{name}” ran on a model of another tokenizer: the teacher-forced comparison "
                                       "reads a lane's tokens with the run's model, token by token.")
        state.show_notice(text.format(name=lane.name), level="info")
        return None
    path = _comparable_model(state, other)
    if path is None or not desk.use_model_of(state.trace):
        return None
    holder = desk.holder  # the run's model (use_model_of may have switched to it)
    if path.resolve() == holder.path.resolve():
        state.show_notice(translate("controller", "{model} is the run's own model: pick another one to compare with.")
                          .format(model=holder.name), level="info")
        return None
    if not _same_vocabulary(state, holder, path):
        return None
    return ModelCompareTask(holder, path, state.shown_trace(), lane.key, lane.name, state.run_limit)


def _comparable_model(state: RunState, other: str | Path) -> Path | None:
    """The prepared model's folder, or None with a notice when it is not prepared (or not intact)."""
    from models.catalog import files_intact, read_manifest, resolve

    try:
        path = resolve(other)
    except FileNotFoundError:
        path = None
    if path is None or not files_intact(path, read_manifest(path)):
        state.show_notice(translate("controller", "Cannot compare with {model}: it is not prepared here (python "
                                                  "main.py prepare --variant …, or Add local folder in the Model "
                                                  "list).").format(model=other))
        return None
    return path


def _same_vocabulary(state: RunState, holder: ModelHolder, other: Path) -> bool:
    from gui.state.model_comparison import vocabulary_sizes

    try:
        sizes = vocabulary_sizes(holder.path, other)
    except (OSError, ValueError) as error:
        sizes, why = None, str(error)
    else:
        why = ("" if sizes is None else
               translate("controller", "its vocabulary differs ({a} vs {b} tokens)").format(a=sizes[0], b=sizes[1])
               if sizes[0] != sizes[1] else
               translate("controller", "its vocabulary has other tokens ({a} each)").format(a=sizes[0]))
    if why:
        state.show_notice(translate("controller", "Cannot compare {model} with {other} token by token: {why}. A "
                                                  "teacher-forced comparison needs the same tokenizer.")
                          .format(model=holder.name, other=other.name, why=why))
    return not why


def _greedy_pair(holder: ModelHolder, other: Path, trace: RunTrace, cancelled: Cancelled, stage) -> dict | None:
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
