"""Reading a prepared model folder's small JSON files (config, generation config, tokenizer config)."""

from __future__ import annotations

import json
from pathlib import Path

# The inspection model beside a prepared model's model.onnx (written by models.inspection).
INSPECTION_MODEL = "inspection/model.onnx"
INSPECTION_LENS = "inspection/lens.onnx"  # its logit lens: lm_head, softmax, top K (models.inspection_export)


def read_json(path: Path) -> dict:
    """The JSON object in `path`, or {} when the file does not exist."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def as_id_tuple(value) -> tuple[int, ...]:
    if value is None:
        return ()
    return tuple(int(v) for v in (value if isinstance(value, list) else [value]))


def eos_ids_from(model_dir: Path) -> tuple[int, ...]:
    """eos ids as transformers' generate() takes them: generation_config.json first, then config.json."""
    for name in ("generation_config.json", "config.json"):
        eos = as_id_tuple(read_json(model_dir / name).get("eos_token_id"))
        if eos:
            return eos
    return ()


def special_token_text(tokenizer_config: dict, key: str) -> str | None:
    """A special token's text from tokenizer_config.json ("eos_token": "<|im_end|>" or {"content": ...})."""
    value = tokenizer_config.get(key)
    return value.get("content") if isinstance(value, dict) else value


def max_positions_from(config: dict) -> int | None:
    """The positions the model was trained for (learned position tables fail past them, RoPE degrades)."""
    return config.get("max_position_embeddings") or config.get("n_positions")


def attention_windows_from(config: dict) -> list[int | None] | None:
    """Per layer, how many positions back its attention reaches: `sliding_window` for the layers `layer_types`
    calls "sliding_attention" (Gemma 2 and 3), None for those that see everything; None when every layer does.

    >>> attention_windows_from({"sliding_window": 512, "layer_types": ["sliding_attention", "full_attention"]})
    [512, None]
    >>> attention_windows_from({"sliding_window": 4096}) is None  # no layer types: not marked
    True
    """
    window, types = config.get("sliding_window"), config.get("layer_types")
    if not window or not types or "sliding_attention" not in types:
        return None
    return [int(window) if kind == "sliding_attention" else None for kind in types]
