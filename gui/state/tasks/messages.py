"""What a task's worker-thread work reports while it works (`emit(message)`), as typed messages the controller
routes into the run state."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from decoding.records.trace import RunTrace, StepRecord


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
    lane: int  # index in the task's targets
    record: StepRecord


@dataclass(frozen=True)
class ProgressMessage:
    done: int  # a task's own units of work done (a knock-out's rows)
    total: int


Message = StatusMessage | ProviderMessage | RunStartedMessage | PrefillMessage | StepMessage | ProgressMessage
Emit = Callable[[Message], None]
Cancelled = Callable[[], bool]


def prefill_reporter(emit: Emit) -> Callable[[int, int], None]:
    return lambda done, total: emit(PrefillMessage(done, total))
