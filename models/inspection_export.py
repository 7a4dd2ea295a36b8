"""The inspection model's export (runs in the export worker child process: torch, transformers and optimum are
imported inside the functions).

The inspection model reads a whole token sequence once and returns what the app shows about it:

    inputs   input_ids, attention_mask, position_ids   int64 [batch, T]  (as the architecture's optimum export)
    outputs  attentions  float32 [batch, L, H, T, T]   every layer's softmax attention, per head (eager attention)
             lens_ids    int64   [batch, L + 1, T, K]  logit lens: the K most likely next tokens, best first,
             lens_probs  float32 [batch, L + 1, T, K]  ... and their probabilities

Lens row 0 reads the embedding output, row l the output of layer l: the model's final norm, then lm_head, then
softmax, as a logit lens does; row L is the model's own next-token distribution. The lens runs inside the
graph so that only the top K leave it: all rows' full distributions would be (L + 1) x T x vocab floats
(31 x 49 152 x 4 bytes = 6 MB per token for SmolLM2-135M), against 31 x 10 x 12 bytes = 3.7 KB.

optimum exports it: the architecture's own text-generation OnnxConfig (inputs, dummy inputs, dynamic axes)
with these outputs, and its model patcher (it makes transformers' mask creation and output recording
traceable), whose forward we replace by one that also computes the lens.
"""

from __future__ import annotations

import shutil
from pathlib import Path

LENS_TOP_K = 10
OUTPUTS = ("attentions", "lens_ids", "lens_probs")
EXPORT_TASK = "text-generation"  # no KV cache: one call over the whole sequence
CHECK_LENGTH = 12  # tokens of the check sequence (models.inspection records its result)


def load_eager_model(weights: Path):
    """The float32 model (eval) from a GGUF file (dequantized) or an HF folder, with eager attention: the only
    implementation that returns attention weights."""
    import torch
    from transformers import AutoModelForCausalLM

    options = {"dtype": torch.float32, "attn_implementation": "eager"}
    if weights.suffix == ".gguf":
        model = AutoModelForCausalLM.from_pretrained(weights.parent, gguf_file=weights.name, **options)
    else:
        model = AutoModelForCausalLM.from_pretrained(weights, **options)
    return model.eval()


def final_norm(model):
    """The norm applied after the last layer: `norm` in Llama/Qwen2/Mistral, `ln_f` in GPT-2."""
    base = model.base_model
    norm = getattr(base, "norm", None) or getattr(base, "ln_f", None)
    if norm is None:
        raise ValueError(f"{type(model).__name__} has no final norm (`norm` or `ln_f`) for the logit lens")
    return norm


def inspect_forward(forward, model, input_ids, attention_mask, position_ids, top_k: int = LENS_TOP_K) -> dict:
    """Attention weights and the logit lens's top_k of one forward call (`forward`: the model's own forward).

    The lens's last row comes from the model's logits rather than from hidden_states[L]: transformers 4.57
    applies the final norm to hidden_states[L], but under optimum's traceable output recording it is the
    last layer's raw output; hidden_states[0..L-1] (embedding and layer outputs) are the same in both."""
    import torch

    out = forward(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        use_cache=False,
        output_attentions=True,
        output_hidden_states=True,
        logits_to_keep=0,  # every position
    )
    layers = len(out.attentions)
    if len(out.hidden_states) != layers + 1:
        raise ValueError(f"expected {layers + 1} hidden states for {layers} layers, got {len(out.hidden_states)}")
    norm, lm_head = final_norm(model), model.get_output_embeddings()
    ids, probs = [], []
    for layer in range(layers + 1):
        logits = out.logits if layer == layers else lm_head(norm(out.hidden_states[layer]))
        top = torch.softmax(logits.float(), dim=-1).topk(top_k, dim=-1)
        probs.append(top.values)
        ids.append(top.indices)
    return {
        "attentions": torch.stack(out.attentions, dim=1),
        "lens_ids": torch.stack(ids, dim=1),
        "lens_probs": torch.stack(probs, dim=1),
    }


def inspection_onnx_config(model):
    """The architecture's optimum OnnxConfig for text generation (no KV cache), with the inspection outputs and a
    patcher whose forward is inspect_forward."""
    from optimum.exporters.tasks import TasksManager

    constructor = TasksManager.get_exporter_config_constructor(
        exporter="onnx", model=model, task=EXPORT_TASK, library_name="transformers"
    )
    base = constructor.func  # a functools.partial of the config class

    class InspectionOnnxConfig(base):
        @property
        def outputs(self) -> dict[str, dict[int, str]]:
            sequence = "sequence_length"
            return {
                "attentions": {0: "batch_size", 3: sequence, 4: sequence},
                "lens_ids": {0: "batch_size", 2: sequence},
                "lens_probs": {0: "batch_size", 2: sequence},
            }

        def patch_model_for_export(self, model, model_kwargs=None):
            patcher = super().patch_model_for_export(model, model_kwargs)
            forward = patcher.orig_forward  # optimum's traceable version of the model's forward

            def patched_forward(input_ids, attention_mask, position_ids):
                return inspect_forward(forward, model, input_ids, attention_mask, position_ids)

            patcher.patched_forward = patched_forward
            return patcher

    return InspectionOnnxConfig(model.config, task=EXPORT_TASK)


def export_inspection(model, out_dir: Path) -> list[str]:
    """Export `model` (loaded with eager attention) into out_dir; returns the ONNX file names written (model.onnx,
    plus model.onnx_data for models past protobuf's 2 GB)."""
    from optimum.exporters.onnx import onnx_export_from_model

    if model.config._attn_implementation != "eager":
        raise ValueError("the inspection export needs attn_implementation='eager' (only it returns attention weights)")
    scratch = out_dir / ".export"
    onnx_export_from_model(
        model,
        scratch,
        task=EXPORT_TASK,
        custom_onnx_configs={"model": inspection_onnx_config(model)},
        do_validation=False,  # check() below compares with transformers' own outputs instead
        no_post_process=True,
    )
    names = [p.name for p in scratch.iterdir() if p.name.startswith("model.onnx")]
    for name in names:
        shutil.move(scratch / name, out_dir / name)
    shutil.rmtree(scratch)
    return sorted(names)


def transformers_reference(model, token_ids: list[int]) -> tuple:
    """(attentions [L, H, T, T], lens probabilities [L + 1, T, vocab]) as numpy, from transformers itself with
    output_attentions / output_hidden_states: hidden_states[L] is already final-normed there (lm_head of it
    is the logits), so the norm applies to rows 0..L-1 only."""
    import torch

    with torch.no_grad():
        out = model(torch.tensor([token_ids]), output_attentions=True, output_hidden_states=True)
        layers = len(out.attentions)
        norm, lm_head = final_norm(model), model.get_output_embeddings()
        rows = [norm(h) if i < layers else h for i, h in enumerate(out.hidden_states)]
        probs = torch.stack([torch.softmax(lm_head(h)[0].float(), dim=-1) for h in rows])
        attentions = torch.cat(out.attentions)
    return attentions.numpy(), probs.numpy()


def check_reference(model) -> tuple[list[int], tuple]:
    """A fixed token sequence and transformers' outputs on it, to compare the export with. Taken before the
    export: optimum's patcher leaves its traceable forward on the model instance, and with it hidden_states[L]
    is no longer final-normed."""
    import numpy as np

    token_ids = np.random.default_rng(0).integers(model.config.vocab_size, size=CHECK_LENGTH).tolist()
    return token_ids, transformers_reference(model, token_ids)


def check(onnx_path: Path, token_ids: list[int], reference: tuple) -> dict:
    """Run the exported model with ONNX Runtime on `token_ids` and compare it with transformers' `reference`:
    the largest attention difference, the largest lens-probability difference at the lens's ids, and the
    largest difference from the reference's own best probabilities (the lens really holds the top k)."""
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    ids = np.array([token_ids], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "position_ids": np.arange(ids.shape[1])[None]}
    feed = {i.name: feed[i.name] for i in session.get_inputs()}
    attentions, lens_ids, lens_probs = (x[0] for x in session.run(list(OUTPUTS), feed))
    ref_attentions, ref_probs = reference
    best = -np.sort(-ref_probs, axis=-1)[..., :LENS_TOP_K]
    result = {
        "token_ids": token_ids,
        "attention_max_abs_diff": float(np.abs(attentions - ref_attentions).max()),
        "lens_prob_max_abs_diff": float(np.abs(np.take_along_axis(ref_probs, lens_ids, -1) - lens_probs).max()),
        "lens_top_max_abs_diff": float(np.abs(best - lens_probs).max()),
    }
    lens_diff = max(result["lens_prob_max_abs_diff"], result["lens_top_max_abs_diff"])
    if result["attention_max_abs_diff"] > 1e-4 or lens_diff > 1e-3:
        raise ValueError(f"the inspection model differs from transformers: {result}")
    return result
