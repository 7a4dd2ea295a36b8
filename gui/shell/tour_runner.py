"""Help → Tour, run: a stop's prompt, lanes and view are set up (after "Save changes?", so Cancel leaves the
window as it was), its run starts with the stop's own seed (the user's seed setting is never changed), and the
stop's after-action (gui.state.tour.AFTER_ACTIONS) follows the run: replay a near-tie, select a critical point or
where two lanes part, add temperature fan-outs, run again, explain lane 0 and show the attention or the logit
lens, or compare lane 0 with a precision variant of the model. A stop in Chinese runs on a prepared model that
writes Chinese when the window's does not (and says how to get one when none is prepared). The stop's banner goes
with the first run that is not the tour's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QObject, QTimer

from decoding.analysis.critical import critical_point
from decoding.chain.spec import LaneSpec
from gui.i18n import translate
from gui.present.inside_data import latest_settling, word_span
from gui.present.model_offers import human_size, model_languages
from gui.shell.unsaved import UnsavedRun
from gui.state import tour
from gui.state.controller import RunController
from gui.state.run_state import RunState
from gui.state.tasks.kind import TaskKind
from models.catalog import catalog_models_writing, manifest_is_valid, models_dir
from models.variants import variant_name


class TourRunner(QObject):
    def __init__(self, state: RunState, controller: RunController, unsaved: UnsavedRun,
                 show_view: Callable[[str], QObject], switch_model: Callable[[Path], None] | None = None,
                 parent: QObject | None = None) -> None:
        """`show_view(id)` brings a view's tab to the front and returns the view; `switch_model(folder)` makes a
        prepared model the window's (its picker follows), else the controller alone switches."""
        super().__init__(parent)
        self.state, self.controller, self.unsaved, self.show_view = state, controller, unsaved, show_view
        self.switch_model = switch_model or controller.set_model
        self._stop: tour.TourStop | None = None  # a stop whose run is on its way (its after-action follows)
        self._inside_stop: tour.TourStop | None = None  # a stop whose explanation is on its way
        self._why_stop: tour.TourStop | None = None  # a stop whose "why" is on its way (then its explanation)
        self._why_step: int | None = None
        self._starting_own_job = False  # the tour itself starts the job now (its banner stays)
        self.last_key: str | None = None  # the stop opened last (the tour dialog's Next goes on from it)
        state.events.connect("run_started", self._on_run_started)
        state.events.connect("run_finished", self._on_run_finished)
        state.events.connect("explanations_changed", self._on_explained)
        state.events.connect("why_changed", self._on_why)

    def start(self, key: str) -> bool:
        """Set up a tour stop (prompt, lanes, view) and run it; its after-action follows the run."""
        stop = tour.stop(key)
        if self.controller.runner.is_running():
            self.state.show_notice(translate("TourRunner", "Stop the run before starting a tour stop."))
            return False
        specs = self._specs(stop)
        if specs is None or not self.unsaved.may_discard(translate("TourRunner", "open a tour stop"), new_run=True):
            return False
        model_note, chat = self._model_for(stop)
        self.state.set_specs(specs)
        for index, lane in enumerate(stop.lanes):
            if lane.fanout > 1:
                self.state.set_fanout(index, lane.fanout)
        self.state.update_request(text=stop.prompt, chat=chat, system=None, max_new_tokens=stop.max_new_tokens)
        self.show_view(stop.view)
        note = f" ({model_note})" if model_note else ""
        self.state.show_notice(f"{tour.title(stop)} — {tour.text(stop)}{note}", level="info", cause="tour")
        self._stop, self.last_key = stop, stop.key
        self._run(stop)
        return True

    def _specs(self, stop: tour.TourStop) -> list[LaneSpec] | None:
        """The stop's lanes; a stop comparing the run's model with its precision variant puts its last lane on
        that variant, or says how to prepare it (None) when it is not prepared."""
        specs = [lane.spec for lane in stop.lanes]
        variant = stop.extra.get("variant")
        if variant is None:
            return specs
        name = variant_name(self.controller.holder.name, variant) if self.controller.holder else variant
        if not manifest_is_valid(models_dir() / name):
            self.state.show_notice(translate(
                "TourRunner", "This stop compares the model with its {variant} variant, {name}, which is not prepared "
                              "here: prepare it first (Model → Add precision variant…, or python main.py prepare "
                              "--variant {variant}).").format(variant=variant, name=name), level="info")
            return None
        return [*specs[:-1], replace(specs[-1], model=name)]

    def _model_for(self, stop: tour.TourStop) -> tuple[str | None, bool]:
        """A stop in a language the window's model does not write: switch to the first prepared model that writes
        it, or say which one would (the stop then runs on the window's model). The words for the banner, and
        whether the stop's prompt goes through the chat template (not on a base model, which has none)."""
        holder = self.controller.holder
        languages = model_languages(Path(holder.path)) if holder is not None else None
        if stop.language is None or languages is None or stop.language in languages:
            return None, stop.chat
        candidates = catalog_models_writing(stop.language)
        if not candidates:
            return None, stop.chat
        entry = candidates[0]
        if entry.is_prepared():
            self.switch_model(entry.folder)
            return translate("TourRunner", "on {model}, which writes Chinese; {previous} writes English only").format(
                model=entry.name, previous=holder.name), stop.chat and entry.instruct
        return translate("TourRunner", "{model} writes English only: this stop reads best on {other} ({size}, "
                                       "prepared once: Model → Add model…, or python main.py prepare --catalog "
                                       "{other} --accept-license)").format(
            model=holder.name, other=entry.name, size=human_size(entry.download_bytes)), stop.chat

    def _run(self, stop: tour.TourStop) -> None:
        self._own(lambda: self.controller.run(replace(self.state.request, seed=stop.seed)))

    def _own(self, start_job: Callable[[], object]) -> None:
        """Start a job of the tour's own (its run_started comes while this runs)."""
        self._starting_own_job = True
        try:
            start_job()
        finally:
            self._starting_own_job = False

    def _on_run_started(self, kind: TaskKind) -> None:
        if kind.new_run:
            self._inside_stop = None  # its explanation never came (cancelled, failed): not for a later one
        if kind.adds_run_text and not self._starting_own_job:
            self._stop = None
            self.state.clear_notice("tour")  # the stop's words are about the stop's run, not this one

    def _on_run_finished(self) -> None:
        if self._stop is not None and self.state.job is None:
            stop, self._stop = self._stop, None
            QTimer.singleShot(0, lambda: self._after_run(stop))

    def _after_run(self, stop: tour.TourStop) -> None:
        state = self.state
        firsts = [(index, next((r.step for r in lane.trace.steps if critical_point(r, state.critical)), None))
                  for index, lane in enumerate(state.lanes)]
        first = next(((index, step) for index, step in firsts if step is not None), None)
        if stop.after == "replay_first_critical":
            lane = 1 if firsts[1][1] is not None else (first[0] if first else None)
            if lane is not None:
                step = dict(firsts)[lane]
                self._own(lambda: self.controller.replay_not_taken(lane, step))
                state.select(lane, step)
        elif stop.after == "select_first_critical" and first is not None:
            state.select(*first)
        elif stop.after == "select_first_step" and state.lanes and state.lanes[0].trace.steps:
            state.select(0, 0)
        elif stop.after == "select_first_divergence" and state.divergence_step(1) is not None:
            state.select(1, state.divergence_step(1))
        elif stop.after == "compare_models":
            if state.divergence_step(1) is not None:
                state.select(0, state.divergence_step(1))  # the first lane's near-tie where the two part
            self.controller.compare_with_model(0, state.lanes[1].spec.model)
        elif stop.after == "temperature_fanouts":
            self.controller.add_temperature_fanouts(0)
            self.show_view("sweep").show_diversity()
            self._run(stop)
        elif stop.after == "run_again":
            seed = state.request.seed
            self._own(self.controller.replay)  # with the run's seeds...
            state.update_request(seed=seed)  # ...while the user's seed setting stays theirs
        elif stop.after == "why_contrast":
            self._ask_why(stop)
        elif stop.after in ("explain_contrast", "explain_journey"):
            self._inside_stop = stop  # shown once the explanation is in (_on_explained)
            self.controller.explain_lane(0)

    def _ask_why(self, stop: tour.TourStop) -> None:
        """Why lane 0 chose the stop's contrast word at its first step choosing it (a notice when it never did)."""
        steps = self.state.lanes[0].trace.steps if self.state.lanes else []
        step = next((r.step for r in steps if r.token_text == stop.extra["contrast"]), None)
        if step is None:
            self.state.show_notice(translate("TourRunner", "This run never chose “{token}”: select a step and press "
                                                           "Y to ask why it chose its token.").format(
                token=stop.extra["contrast"]), level="info")
            return
        self._why_stop, self._why_step = stop, step
        self.state.select(0, step)
        record = steps[step]
        others = dict(zip(record.top_raw.texts, record.top_raw.ids, strict=True))
        b = others.get(stop.extra["b"]) if "b" in stop.extra else None  # else the runner-up
        if not self.controller.why(0, step, b=b):
            self._why_stop = None

    def _on_why(self, _index: int, _result) -> None:
        if self._why_stop is not None:  # then the same step's attention, once explained
            self._inside_stop, self._why_stop = self._why_stop, None
            QTimer.singleShot(0, lambda: self.controller.explain_lane(0))

    def _on_explained(self) -> None:
        if self._inside_stop is not None:  # once every view has taken the explanation in
            QTimer.singleShot(0, self._show_inside)

    def _show_inside(self) -> None:
        """Lane 0's explanation: where its contrast word looks back at the concessive one, or the logit lens where
        the lane's choice settles latest (that step selected). The stop stays pending until now, so the window
        knows the view to show is the tour's."""
        stop, self._inside_stop = self._inside_stop, None
        if stop is None:  # a run started in between
            return
        result = self.state.explanation(0)
        if stop.after == "why_contrast":
            query = result.prompt_length + self._why_step - 1  # the token whose output chose the contrast word
            self.show_view("attention").show_look(query, word_span(result, stop.extra["concessive"],
                                                                   within=result.prompt_length))
            self.state.select(0, self._why_step)
            self.show_view("why")
        elif stop.after == "explain_contrast":
            prompt = result.prompt_length
            query = word_span(result, stop.extra["contrast"], last=True, within=prompt)[-1]
            self.show_view("attention").show_look(query, word_span(result, stop.extra["concessive"], within=prompt))
        else:
            position = latest_settling(result)
            if position is not None:
                self.state.select(0, position + 1 - result.prompt_length)
            self.show_view("lens")

    @property
    def waiting_for_explanation(self) -> bool:
        """A stop's explanation is on its way, or has just come (its view is shown next)."""
        return self._inside_stop is not None
