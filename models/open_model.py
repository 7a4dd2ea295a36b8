"""Open a prepared model for a front end (the window in gui/, the commands in cli/): find its folder by name or
path, load it with runtime/ on a device, and hand out what a run needs — the decoder and tokenizer, the identity
a RunTrace records, the provider really in use, the eos ids, an Engine over them, and the prompt encoded.

It lives in models/ because models/ owns the catalog (name → folder, manifest) and already sits above runtime/
(validation runs ORT sessions): runtime/ loads a folder it is given and knows no catalog, and decoding/ knows
neither (it talks to a LogitsSource and a TokenText).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from decoding.engine.engine import Engine
from decoding.engine.protocol import LaneModel, OwnTokenizer
from decoding.records.model_info import LaneModelInfo
from decoding.records.trace import ModelInfo, PromptInfo
from models.catalog import list_models, resolve
from models.model_text import ModelText, encode_prompt
from runtime import LoadedModel, load_model
from runtime.model_files import max_positions_from, read_json
from runtime.served.address import is_served
from runtime.tokenizer import Tokenizer


@dataclass
class OpenModel:
    """runtime's loaded model plus the identity a RunTrace records."""

    loaded: LoadedModel
    info: ModelInfo

    @property
    def decoder(self) -> Any:
        return self.loaded.decoder  # a decoding.engine.protocol.LogitsSource

    @property
    def tokenizer(self) -> Any:
        return self.loaded.tokenizer  # a decoding.engine.protocol.TokenText, with the model's chat template

    @property
    def provider(self) -> str:
        return self.loaded.provider

    @property
    def eos_token_ids(self) -> list[int]:
        return list(self.loaded.eos_token_ids)

    def engine(self, **settings: Any) -> Engine:
        """An Engine over this model; `settings` are Engine's keywords (top_n, near_tie_threshold, models: a
        LaneModels over this model for lanes that name their own)."""
        return Engine(self.decoder, self.tokenizer, self.eos_token_ids, **settings)

    def encode_prompt(self, text: str, chat: bool = False, system: str | None = None) -> PromptInfo:
        return encode_prompt(self.tokenizer, text, chat, system)


def open_model_text(name_or_path: str | Path | None = None) -> ModelText:
    """The ModelText of the prepared model named or at `name_or_path` (default: the default model).
    FileNotFoundError when it is not prepared or has no tokenizer.json; OSError / ValueError when its files
    cannot be read."""
    if isinstance(name_or_path, str) and is_served(name_or_path):
        from models.served_lane import served_model_text

        return served_model_text(str(name_or_path))
    model_dir = resolve(name_or_path)
    config = read_json(model_dir / "config.json")
    return ModelText(Tokenizer.from_model_dir(model_dir), max_positions_from(config))


def model_identity(model_dir: Path, manifest: dict) -> ModelInfo:
    """Name, file hashes (sorted by file name) and folder of a prepared model, as a RunTrace records them."""
    hashes = {
        name: entry["sha256"]
        for name, entry in sorted((manifest.get("files") or {}).items())
        if isinstance(entry, dict) and "sha256" in entry
    }
    return ModelInfo(name=manifest.get("name", model_dir.name), hashes=hashes, path=str(model_dir))


def open_model(
    name_or_path: str | Path | None = None, device: str = "auto", tokenizer: Tokenizer | None = None
) -> OpenModel:
    """The prepared model named or at `name_or_path` (default: the default model) on `device` ("auto", "cpu",
    "cuda"); `tokenizer`: its tokenizer when the caller has loaded it already (not loaded twice). Raises
    FileNotFoundError when it is not prepared, runtime.DeviceError when the device is not usable, OSError /
    ValueError when its files cannot be loaded. A served model's name opens a connection to the server instead
    (models.served_lane.ServedRunModel; ValueError when the name is bad or the server does not answer)."""
    if isinstance(name_or_path, str) and is_served(name_or_path):  # a whole run on a server (runtime.served)
        from models.served_lane import open_served_model

        return open_served_model(str(name_or_path))
    model_dir = resolve(name_or_path)
    loaded = load_model(model_dir, device=device, tokenizer=tokenizer)
    return OpenModel(loaded, model_identity(model_dir, loaded.manifest))


class LaneModels:
    """The models lanes name (decoding.engine.protocol.ModelResolver), opened on first use on the run model's device and
    kept by name; a served model's name (runtime.served: llamacpp+http://...) opens a connection to it
    (models.served_lane). Refuses (LookupError, in words) a model that is not prepared, naming the prepared ones. A
    model whose tokenizer differs from the run model's brings it (LaneModel.tokenizer): its lanes read the prompt as
    it encodes it, and are compared with the run's lanes by text."""

    def __init__(self, run_model: OpenModel, device: str = "auto") -> None:
        self.run_model = run_model
        self.device = device
        self._opened: dict[str, LaneModel] = {}
        self._lock = threading.Lock()

    def __call__(self, name: str) -> LaneModel:
        with self._lock:
            if name not in self._opened:
                self._opened[name] = self._open(name)
            return self._opened[name]

    def _open(self, name: str) -> LaneModel:
        if is_served(name):  # a server (runtime.served), not a prepared model
            from models.served_lane import served_lane_model

            return served_lane_model(name, self.run_model.tokenizer, self.run_model.decoder.vocab_size)
        model_dir = lane_model_dir(name)
        own = _tokenizer_bytes(model_dir)
        opened = open_model(model_dir, self.device)
        info = lane_model_info(opened.info, opened.loaded.manifest)
        run_path = self.run_model.info.path  # None: a run on a server, whose tokenizer is no file
        if run_path is not None and own == _tokenizer_bytes(Path(run_path)):
            return LaneModel(opened.decoder, info)
        tokenizer = OwnTokenizer(opened.tokenizer, lambda prompt: _encode_as_run(opened.tokenizer, prompt),
                                 tuple(opened.eos_token_ids))
        return LaneModel(opened.decoder, replace(info, tokenizer=hashlib.sha256(own or b"").hexdigest()), tokenizer)


def _encode_as_run(tokenizer: Any, prompt: PromptInfo) -> list[int]:
    """The run's prompt (its text, chat and system prompt) as another tokenizer encodes it."""
    return encode_prompt(tokenizer, prompt.text, prompt.chat, prompt.system).ids


def lane_model_dir(name: str) -> Path:
    """The folder of the model a lane names; LookupError naming the prepared ones when it is not prepared."""
    try:
        return resolve(name)
    except FileNotFoundError:
        prepared = ", ".join(m.name for m in list_models()) or "none"
        raise LookupError(f"a prepared model (prepared: {prepared})") from None


def lane_model_info(info: ModelInfo, manifest: dict) -> LaneModelInfo:
    """A model's identity as a lane on it records it: the run's identity plus its precision."""
    from models.variants import precision_of

    return LaneModelInfo(**asdict(info), precision=precision_of(manifest))


def _tokenizer_bytes(model_dir: Path) -> bytes | None:
    try:
        return (model_dir / "tokenizer.json").read_bytes()
    except OSError:
        return None
