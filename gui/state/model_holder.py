"""The window's language model, Qt-free: loaded lazily (or preloaded on a thread of its own) and kept with one
Engine over it and its inspection model; prompt encoding. The tasks that use it are in gui.state.tasks."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from decoding.chain.spec import LaneSpec
from decoding.engine.engine import Engine
from decoding.records.trace import PromptInfo
from gui.state.requests import RunRequest

if TYPE_CHECKING:
    from models.inspection import Explainer
    from models.open_model import OpenModel
    from runtime.tokenizer import Tokenizer


class ModelHolder:
    """Loads the model on first use (on the worker thread), or ahead of it (`preload`), and keeps it, and one
    Engine over it, for later runs; likewise its inspection model for explaining lanes. The models lanes name
    (LaneSpec.model) are opened by the engine's models.open_model.LaneModels on the first run that needs each,
    and kept by name."""

    def __init__(self, path: Path, device: str = "auto") -> None:
        self.path = Path(path)
        self.device = device  # "auto", "cpu" or "cuda" (models.open_model)
        self._loaded: OpenModel | None = None
        self._engine: Engine | None = None
        self._explainer: Explainer | None = None
        self._tokenizer: Tokenizer | None = None
        self._lock = threading.Lock()
        self._preload: threading.Thread | None = None
        # called once the model is loaded, on the thread that loaded it (the window hands it to its own thread)
        self.on_loaded: Callable[[OpenModel], None] | None = None

    def preload(self) -> None:
        """Start loading the model now, on a thread of its own (ONNX Runtime releases the GIL while it builds the
        session, the longest part); the first run's get() waits for what is left. A failure is left to that
        get(), which tries again and reports it. Not a daemon thread, and `wait_preloaded` when the window
        closes: nothing is left half set up."""
        if self._loaded is None and self._preload is None:
            self._preload = threading.Thread(target=self._load_ahead, name="model-preload")
            self._preload.start()

    @property
    def preloading(self) -> bool:
        return self._preload is not None and self._preload.is_alive()

    def wait_preloaded(self) -> None:
        if self._preload is not None:
            self._preload.join()

    def _load_ahead(self) -> None:
        try:
            self.get()
        except Exception:  # reported by the run that needs the model (see preload)
            return

    @property
    def name(self) -> str:
        from models.catalog import read_manifest

        return read_manifest(self.path).get("name", self.path.name)

    @property
    def loaded(self) -> OpenModel | None:
        return self._loaded

    def get(self) -> OpenModel:
        from models.open_model import LaneModels, open_model

        with self._lock:
            if self._loaded is not None:
                return self._loaded
            self._loaded = open_model(self.path, device=self.device, tokenizer=self._tokenizer)
            self._engine = self._loaded.engine(models=LaneModels(self._loaded, self.device))
        if self.on_loaded is not None:
            self.on_loaded(self._loaded)
        return self._loaded

    def engine(self) -> Engine:
        self.get()
        return self._engine

    def tokenizer(self) -> Tokenizer:
        """The model's tokenizer: the loaded model's, else read once from its folder (milliseconds, no model)."""
        if self._loaded is not None:
            return self._loaded.tokenizer
        if self._tokenizer is None:
            from runtime.tokenizer import Tokenizer

            self._tokenizer = Tokenizer.from_model_dir(self.path)
        return self._tokenizer

    def encode_prompt(self, request: RunRequest) -> PromptInfo:
        """The request's prompt as a run records it, by the model's tokenizer (no model needed); ValueError for a
        chat prompt when the model has no chat template, OSError when its tokenizer cannot be read."""
        from models.model_text import encode_prompt

        return encode_prompt(self.tokenizer(), request.text, request.chat, request.system)

    def start_token_id(self) -> int | None:
        """The id of the model's start (bos) token, None when it names none."""
        tokenizer = self.tokenizer()
        text = tokenizer.special_tokens.get("bos_token")
        return tokenizer.backend.token_to_id(text) if text is not None else None

    def max_positions(self) -> int | None:
        """The positions the model takes (its config's), None when it does not say."""
        from runtime.model_files import max_positions_from, read_json

        return max_positions_from(read_json(self.path / "config.json"))

    @property
    def explainer_open(self) -> bool:
        return self._explainer is not None

    def explainer(self) -> Explainer:
        """The model's inspection model (prepared beforehand), opened on first use and kept: creating its
        sessions takes 0.5-0.8 s for the default model (2 cores)."""
        from models.inspection import Explainer

        with self._lock:
            if self._explainer is None:
                self._explainer = Explainer(self.path)
            return self._explainer


def check_lane_models(specs: list[LaneSpec], run_model: str) -> None:
    """A ParameterError naming the lane for one whose model is not prepared, or whose server address does not
    parse (before a run, on the GUI thread: folders and addresses only, no model opened or server asked; the engine
    checks the rest when it opens them)."""
    from decoding.engine.engine import own_model, refuse_model
    from models.open_model import lane_model_dir
    from runtime.served import is_served, parse_address

    for spec in specs:
        name = own_model(spec, run_model)
        if name is None:
            continue
        try:
            parse_address(name) if is_served(name) else lane_model_dir(name)
        except (LookupError, ValueError) as exc:
            refuse_model(spec, str(exc))
