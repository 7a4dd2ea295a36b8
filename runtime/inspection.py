"""The inspection model (prepared by models.inspection) on ONNX Runtime: one call over a whole token sequence
returns every layer's attention weights per head and the logit lens's hidden states, as numpy arrays; its lens
graph turns any of those hidden states into the lens's best tokens.

    inspector = InspectionModel(model_dir, device="auto")
    arrays = inspector.run(token_ids)    # arrays.attentions [L, H, T, T], arrays.hidden [L + 1, T, D]
    ids, probs = inspector.lens(arrays.hidden[:, -1])     # [L + 1, K] each: the lens after the last token

The lens is a call of its own because it costs 8x the forward pass over every row of every position (the
[D, vocab] lm_head product of each), while a reader wants a few positions at a time. Both run once in a while,
never while decoding; their sessions' threads sleep as soon as a run ends so that they do not slow the
decoder's next step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from runtime.decoder import INT_TYPES
from runtime.model_files import INSPECTION_LENS, INSPECTION_MODEL, max_positions_from, read_json
from runtime.session import create_session

OUTPUTS = ("attentions", "lens_hidden")
LENS_OUTPUTS = ("lens_ids", "lens_probs")
# Hidden-state rows per lens call: its logits and softmax are 2 x rows x vocab floats (100 MB at 256 rows of
# SmolLM2's 49 152), a bound on what a whole sequence's lens holds at once.
LENS_CHUNK = 256


@dataclass(frozen=True)
class InspectionArrays:
    """One sequence of T tokens through a model of L layers and H heads.

    attentions: float32 [L, H, T, T], row q = query position q's softmax weights over key positions (0 after q).
    hidden: float32 [L + 1, T, D], the logit lens's hidden states through the final norm: row 0 of the embedding
    output, row l of the output of layer l; row L is what the model's lm_head reads (InspectionModel.lens)."""

    attentions: np.ndarray
    hidden: np.ndarray


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
        self.lens_session, _ = create_session(model_dir / INSPECTION_LENS, self.placement.device, threads,
                                              spinning=False)
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
        attentions, hidden = self.session.run(list(OUTPUTS), feed)
        return InspectionArrays(attentions[0], hidden[0])

    def lens(self, hidden: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The logit lens of final-normed hidden states [..., D] (InspectionArrays.hidden, or rows of it):
        lm_head, softmax, the K most likely next tokens, best first, as ids int64 [..., K] and probabilities
        float32 [..., K]; in calls of at most LENS_CHUNK rows."""
        rows = np.ascontiguousarray(hidden, dtype=np.float32).reshape(-1, hidden.shape[-1])
        parts = [self.lens_session.run(list(LENS_OUTPUTS), {"hidden": rows[start : start + LENS_CHUNK]})
                 for start in range(0, len(rows), LENS_CHUNK)]
        ids, probs = (np.concatenate([part[i] for part in parts]) for i in range(2))
        return ids.astype(np.int64).reshape(*hidden.shape[:-1], -1), probs.reshape(*hidden.shape[:-1], -1)

    def check_length(self, length: int) -> None:
        if length < 1:
            raise ValueError("token_ids must not be empty")
        if self.max_positions and length > self.max_positions:
            raise ValueError(f"sequence length {length} exceeds the model's {self.max_positions} positions")
