"""The inspection model (prepared by models.inspection) on ONNX Runtime: one call over a whole token sequence
returns every layer's attention weights per head and the logit lens's best tokens, as numpy arrays.

    inspector = InspectionModel(model_dir, device="auto")
    arrays = inspector.run(token_ids)    # arrays.attentions [L, H, T, T], arrays.lens_ids / lens_probs [L + 1, T, K]

It runs once over a finished sequence, never while decoding; its session's threads sleep as soon as a run
ends so that they do not slow the decoder's next step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from runtime.decoder import INT_TYPES
from runtime.model_files import INSPECTION_MODEL, max_positions_from, read_json
from runtime.session import create_session

OUTPUTS = ("attentions", "lens_ids", "lens_probs")


@dataclass(frozen=True)
class InspectionArrays:
    """One sequence of T tokens through a model of L layers and H heads.

    attentions: float32 [L, H, T, T], row q = query position q's softmax weights over key positions (0 after q).
    lens_ids, lens_probs: int64 / float32 [L + 1, T, K], the logit lens: row 0 reads the embedding output, row l
    the output of layer l (final norm, lm_head, softmax), row L is the model's own next-token distribution;
    the K most likely tokens after each position, best first."""

    attentions: np.ndarray
    lens_ids: np.ndarray
    lens_probs: np.ndarray


class InspectionModel:
    """The inspection model of a prepared model folder on `device` ("auto", "cpu", "cuda")."""

    def __init__(self, model_dir: str | Path, device: str = "auto", threads: int | None = None):
        model_dir = Path(model_dir)
        path = model_dir / INSPECTION_MODEL
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found (prepare it with models.inspection.prepare_inspection)")
        config = read_json(model_dir / "config.json")
        self.max_positions = max_positions_from(config)
        self.vocab_size: int | None = config.get("vocab_size")
        self.session, self.placement = create_session(path, device, threads, spinning=False)
        self.inputs = {i.name: INT_TYPES[i.type] for i in self.session.get_inputs()}
        missing = [name for name in OUTPUTS if name not in {o.name for o in self.session.get_outputs()}]
        if missing or "input_ids" not in self.inputs:
            raise ValueError(
                f"{path} is not an inspection model (missing outputs {missing}, inputs {list(self.inputs)})"
            )

    @property
    def provider(self) -> str:
        return self.placement.provider

    def run(self, token_ids: Sequence[int]) -> InspectionArrays:
        ids = np.asarray(token_ids, dtype=np.int64).reshape(1, -1)
        self.check_length(ids.shape[1])
        if self.vocab_size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(f"token ids must be in [0, {self.vocab_size}), got {ids.min()}..{ids.max()}")
        whole = {
            "input_ids": ids,
            "attention_mask": np.ones_like(ids),
            "position_ids": np.arange(ids.shape[1], dtype=np.int64)[None, :],
        }
        feed = {name: whole[name].astype(dtype) for name, dtype in self.inputs.items()}
        attentions, lens_ids, lens_probs = self.session.run(list(OUTPUTS), feed)
        return InspectionArrays(attentions[0], lens_ids[0].astype(np.int64), lens_probs[0])

    def check_length(self, length: int) -> None:
        if length < 1:
            raise ValueError("token_ids must not be empty")
        if self.max_positions and length > self.max_positions:
            raise ValueError(f"sequence length {length} exceeds the model's {self.max_positions} positions")
