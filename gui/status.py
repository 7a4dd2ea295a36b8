"""Status bar: model, provider as really active (CUDA or CPU), step x/N, tokens per second, selection."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QStatusBar

from decoding.trace import RunTrace


def provider_label(provider: str) -> str:
    """'CUDAExecutionProvider' → 'CUDA', 'CPUExecutionProvider' → 'CPU' (others shown as they are)."""
    if not provider:
        return ""
    return provider.removesuffix("ExecutionProvider") or provider


def progress_text(step: int, max_steps: int, tokens: int, seconds: float) -> tuple[str, str]:
    """('step 12/64', '23.5 tok/s') while a run streams."""
    rate = tokens / seconds if seconds > 0 else 0.0
    return f"step {step}/{max_steps}", f"{rate:.1f} tok/s"


class StatusBar(QStatusBar):
    def __init__(self) -> None:
        super().__init__()
        self.model = QLabel("no model")
        self.model.setObjectName("statusModel")
        self.provider = QLabel("")
        self.provider.setObjectName("statusProvider")
        self.provider.setToolTip("The ONNX Runtime execution provider really active for the model")
        self.step = QLabel("")
        self.step.setObjectName("statusStep")
        self.speed = QLabel("")
        self.speed.setObjectName("statusSpeed")
        self.speed.setToolTip("Generated tokens per second, all lanes and beams together")
        self.selection = QLabel("")
        for label in (self.selection, self.step, self.speed, self.model, self.provider):
            self.addPermanentWidget(label)
        self._max_steps = 0

    def set_model(self, name: str, provider: str) -> None:
        self.model.setText(f"model: {name}")
        label = provider_label(provider)
        self.provider.setText(label if label else provider)

    def start_run(self, max_steps: int) -> None:
        self._max_steps = max_steps
        self.step.setText(f"step 0/{max_steps}")
        self.speed.setText("")
        self.showMessage("running…")

    def show_progress(self, step: int, tokens: int, seconds: float) -> None:
        step_text, speed_text = progress_text(step, self._max_steps, tokens, seconds)
        self.step.setText(step_text)
        if tokens:
            self.speed.setText(speed_text)

    def finish_run(self, trace: RunTrace, steps: int) -> None:
        self.step.setText(f"step {steps}/{trace.settings.max_new_tokens}")
        if trace.timing.tokens_per_s:
            self.speed.setText(f"{trace.timing.tokens_per_s:.1f} tok/s")
        if trace.provider:
            self.provider.setText(provider_label(trace.provider))
        self.showMessage("done" if not trace.error else "stopped early", 5000)

    def show_selection(self, lane: str, step: int, steps: int) -> None:
        self.selection.setText(f"{lane} · step {step + 1}/{steps}")
