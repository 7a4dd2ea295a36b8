"""Glue between the window and the engine, Qt-free: a lazily loaded model, prompt encoding, and the jobs the
window's worker thread runs (a run, a branch from a finished run, a replay)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from decoding.engine import Engine, branch_prefix
from decoding.spec import Branch, LaneSpec, assign_seeds
from decoding.trace import LaneTrace, ModelInfo, PromptInfo, RunTrace


@dataclass(frozen=True)
class RunRequest:
    text: str
    chat: bool
    system: str | None
    max_new_tokens: int
    seed: int | None = None  # run-level base seed for sampled lanes left at seed 'auto'


@dataclass
class LoadedModel:
    path: Path
    info: ModelInfo
    model: Any  # models.open_model.OpenModel: decoder, tokenizer, provider
    engine: Engine

    @property
    def provider(self) -> str:
        return self.model.provider


class ModelHolder:
    """Loads the model on first use (on the worker thread) and keeps it for later runs."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._loaded: LoadedModel | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        from models.catalog import read_manifest

        return read_manifest(self.path).get("name", self.path.name)

    @property
    def loaded(self) -> LoadedModel | None:
        return self._loaded

    def get(self) -> LoadedModel:
        with self._lock:
            if self._loaded is None:
                self._loaded = _load(self.path)
            return self._loaded


def _load(path: Path) -> LoadedModel:
    from models.open_model import open_model

    model = open_model(path)
    return LoadedModel(path=path, info=model.info, model=model, engine=model.engine())


def prompt_info(model: LoadedModel, request: RunRequest) -> PromptInfo:
    return model.model.encode_prompt(request.text, chat=request.chat, system=request.system)


def run_job(holder: ModelHolder, request: RunRequest, specs: list[LaneSpec]):
    """A worker job: load the model if needed, run every lane, stream (lane index, record) pairs."""

    def job(emit, cancelled) -> RunTrace:
        emit(("status", f"loading {holder.name}…") if holder.loaded is None else ("status", "running"))
        model = holder.get()
        emit(("provider", model.provider))
        prompt = prompt_info(model, request)
        return model.engine.run(prompt, specs, on_step=lambda lane, record: emit((lane, record)),
                                max_new_tokens=request.max_new_tokens, model=model.info,
                                provider=model.provider, base_seed=request.seed, cancel=cancelled)

    return job


def seeded(specs: list[LaneSpec], base_seed: int | None) -> list[LaneSpec]:
    """Give sampled lanes with seed 'auto' a seed (from the base seed and the lane name, or random without one),
    so the run can be saved and replayed."""
    return assign_seeds(list(specs), base_seed)


def branch_spec(parent: LaneSpec, base: LaneSpec, step: int, token_id: int, name: str) -> LaneSpec:
    """The spec a branched lane is saved and replayed with: `base`'s strategy, branching off `parent`."""
    return replace(base, name=name, branch=Branch(parent.name, step, token_id), forced={})


def branch_job(holder: ModelHolder, trace: RunTrace, spec: LaneSpec):
    """A worker job that continues `parent` from `spec.branch.step` with the picked token, under spec's
    strategy, as a one-lane run restarting from the parent's tokens (the prompt and prefix prefilled once)."""
    step, token = spec.branch.step, spec.branch.token_id
    run_spec = replace(spec, branch=None, forced={step: token})
    prefix = branch_prefix(trace, spec.branch.parent, step)

    def job(emit, cancelled) -> RunTrace:
        model = holder.get()
        emit(("provider", model.provider))
        result = model.engine.run(trace.prompt, [run_spec], on_step=lambda _lane, record: emit((0, record)),
                                  max_new_tokens=trace.settings.max_new_tokens, model=model.info,
                                  provider=model.provider, prefix=prefix, cancel=cancelled)
        lane = result.lanes[0]
        lane.branch = {"parent": spec.branch.parent, "step": step, "token_id": token}
        lane.config = spec.to_config()
        return result

    return job


def specs_of(trace: RunTrace) -> list[LaneSpec]:
    """The lane specs a saved run was made with (JSON import, replay)."""
    return [LaneSpec.from_config(lane.name, _config_without_forced(lane), lane.branch)
            for lane in trace.lanes]


def _config_without_forced(lane: LaneTrace) -> dict[str, Any]:
    config = dict(lane.config)
    if lane.branch:
        config.pop("forced", None)
    return config


def request_of(trace: RunTrace) -> RunRequest:
    prompt = trace.prompt
    return RunRequest(prompt.text, prompt.chat, prompt.system, trace.settings.max_new_tokens, trace.settings.seed)
