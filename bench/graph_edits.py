"""ONNX graph edits measured by the suite before they are proposed to models/ (preparation) or runtime/
(load).

`last_position_lm_head`: the exported graph computes logits for every prompt position ([B, S, vocab]: 98 MB
and S x 57 MFLOP of lm_head for a 500-token prompt) although decoding needs only the last one. Slicing the
final hidden state to its last position before lm_head gives the same last-row logits and KV presents."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

LOGITS = "logits"


def last_position_lm_head(model):
    """Edit an onnx.ModelProto in place: `logits` becomes [B, 1, vocab], the last position's. Returns it."""
    from onnx import helper, numpy_helper

    graph = model.graph
    index, head = next((i, n) for i, n in enumerate(graph.node) if LOGITS in n.output)
    hidden = head.input[0]
    bounds = {"bp_last_starts": -1, "bp_last_ends": np.iinfo(np.int64).max, "bp_last_axes": 1}
    graph.initializer.extend(
        numpy_helper.from_array(np.array([v], np.int64), name) for name, v in bounds.items()
    )
    sliced = f"{hidden}_last_position"
    graph.node.insert(index, helper.make_node("Slice", [hidden, *bounds], [sliced], name="bp_last_position"))
    head.input[0] = sliced
    output = next(o for o in graph.output if o.name == LOGITS)
    output.type.tensor_type.shape.dim[1].Clear()
    output.type.tensor_type.shape.dim[1].dim_value = 1
    return model


def edited_model_dir(model_dir: Path, out_dir: Path) -> Path:
    """A copy of a prepared model folder whose model.onnx has the last-position edit (other files linked)."""
    import onnx

    out_dir.mkdir(parents=True, exist_ok=True)
    for path in model_dir.iterdir():
        if path.is_file() and not path.name.startswith("model.onnx") and not path.name.endswith(".gguf"):
            shutil.copy2(path, out_dir / path.name)
    model = last_position_lm_head(onnx.load(str(model_dir / "model.onnx")))
    large = model.ByteSize() > 1_900_000_000  # protobuf's 2 GB limit: keep big weights beside the graph
    onnx.save(model, str(out_dir / "model.onnx"), save_as_external_data=large, location="model.onnx_data")
    return out_dir
