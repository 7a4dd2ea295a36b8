"""The inspection model's export (runs in the export worker child process: torch, transformers and optimum are
imported inside the functions).

The inspection model reads a whole token sequence once and returns what the app shows about it:

    inputs   input_ids, attention_mask, position_ids   int64 [batch, T]  (as the architecture's optimum export)
    outputs  attentions   float32 [batch, L, H, T, T]   every layer's softmax attention, per head (eager attention)
             lens_hidden  float32 [batch, L + 1, T, D]  the logit lens's hidden states through the final norm

Lens row 0 reads the embedding output, row l the output of layer l, through the model's final norm; row L is what
the model's lm_head reads. The rest of the lens (lm_head, softmax, the top K) is a second graph, LENS_FILE,
run on the rows a reader asks for (runtime.inspection): every row of every position costs (L + 1) x T products
with the [D, vocab] lm_head, 8x the forward pass itself for SmolLM2-135M (31 lm_head MatMuls in this graph were
8.9x one plain forward), while the window shows one position at a time. Only its top K leave it: all rows' full
distributions would be 31 x 49 152 x 4 bytes = 6 MB per token for SmolLM2-135M, against 31 x 10 x 12 bytes.

optimum exports it: the architecture's own text-generation OnnxConfig (inputs, dummy inputs, dynamic axes)
with these outputs, and its model patcher (it makes transformers' mask creation and output recording
traceable), whose forward we replace by one that also computes the lens.
"""

from __future__ import annotations

import shutil
from pathlib import Path

LENS_TOP_K = 10
OUTPUTS = ("attentions", "lens_hidden")
LENS_FILE = "lens.onnx"  # hidden [N, D] -> lens_ids int64 [N, K], lens_probs float32 [N, K]
LENS_DATA = "lens.onnx_data"  # its lm_head weight [D, vocab]
LENS_OUTPUTS = ("lens_ids", "lens_probs")
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
    """The norm applied after the last layer: `norm` in Llama/Qwen2/Mistral/Gemma, `ln_f` in GPT-2."""
    norm = None
    for base in (model.base_model, getattr(model, "model", None)):  # Gemma 3's base_model_prefix names no attribute
        norm = norm or getattr(base, "norm", None) or getattr(base, "ln_f", None)
    if norm is None:
        raise ValueError(f"{type(model).__name__} has no final norm (`norm` or `ln_f`) for the logit lens")
    return norm


def inspect_forward(forward, model, input_ids, attention_mask, position_ids) -> dict:
    """Attention weights and the logit lens's final-normed hidden states of one traced forward call (`forward`:
    optimum's traceable version of the model's forward).

    Under optimum's traceable output recording hidden_states[L] is the last layer's raw output (transformers
    4.57 applies the final norm to it outside tracing), so the norm applies to every row here; check() compares
    the result with transformers' own logits."""
    import torch

    out = forward(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        use_cache=False,
        output_attentions=True,
        output_hidden_states=True,
        logits_to_keep=1,  # the lens graph computes the logits it needs
    )
    layers = len(out.attentions)
    if len(out.hidden_states) != layers + 1:
        raise ValueError(f"expected {layers + 1} hidden states for {layers} layers, got {len(out.hidden_states)}")
    norm = final_norm(model)
    return {
        "attentions": torch.stack(out.attentions, dim=1),
        "lens_hidden": torch.stack([norm(h) for h in out.hidden_states], dim=1).float(),
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
                "lens_hidden": {0: "batch_size", 2: sequence},
            }

        def patch_model_for_export(self, model, model_kwargs=None):
            patcher = super().patch_model_for_export(model, model_kwargs)
            forward = patcher.orig_forward  # optimum's traceable version of the model's forward

            def patched_forward(input_ids, attention_mask, position_ids=None):  # Gemma 3 exports take none
                return inspect_forward(forward, model, input_ids, attention_mask, position_ids)

            patcher.patched_forward = patched_forward
            return patcher

    return InspectionOnnxConfig(model.config, task=EXPORT_TASK)


def export_inspection(model, out_dir: Path) -> list[str]:
    """Export `model` (loaded with eager attention) into out_dir, and its lens graph; returns the file names
    written (model.onnx, plus model.onnx_data for models past protobuf's 2 GB; LENS_FILE and LENS_DATA)."""
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
    export_lens(model, out_dir)
    return sorted([*names, LENS_FILE, LENS_DATA])


def export_lens(model, out_dir: Path, top_k: int = LENS_TOP_K) -> None:
    """The lens graph: final-normed hidden states [N, D] through lm_head (MatMul with its weight [D, vocab],
    in LENS_DATA), softmax and TopK, the ops the model's own head and a logit lens run."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    head = model.get_output_embeddings()
    if getattr(head, "bias", None) is not None:
        raise ValueError(f"{type(model).__name__}'s lm_head has a bias; the lens graph has none")
    weight = np.ascontiguousarray(head.weight.detach().float().numpy().T)
    dim, vocab = weight.shape
    if vocab < top_k:
        raise ValueError(f"a vocabulary of {vocab} has no top {top_k}")
    nodes = [
        helper.make_node("MatMul", ["hidden", "lm_head"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        helper.make_node("TopK", ["probs", "k"], ["lens_probs", "lens_ids"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "logit_lens",
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["rows", dim])],
        [
            helper.make_tensor_value_info("lens_ids", TensorProto.INT64, ["rows", top_k]),
            helper.make_tensor_value_info("lens_probs", TensorProto.FLOAT, ["rows", top_k]),
        ],
        [numpy_helper.from_array(weight, "lm_head"), numpy_helper.from_array(np.array([top_k], np.int64), "k")],
    )
    lens = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)  # ORT >= 1.10 loads
    onnx.save(lens, out_dir / LENS_FILE, save_as_external_data=True, location=LENS_DATA, size_threshold=1024)


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
    """Run the exported model and its lens graph (beside it) with ONNX Runtime on `token_ids` and compare them
    with transformers' `reference`: the largest attention difference, the largest lens-probability difference
    at the lens's ids, and the largest difference from the reference's own best probabilities (the lens really
    holds the top k)."""
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    lens = ort.InferenceSession(str(onnx_path.parent / LENS_FILE), providers=["CPUExecutionProvider"])
    ids = np.array([token_ids], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "position_ids": np.arange(ids.shape[1])[None]}
    feed = {i.name: feed[i.name] for i in session.get_inputs()}
    attentions, hidden = (x[0] for x in session.run(list(OUTPUTS), feed))
    rows = hidden.reshape(-1, hidden.shape[-1])
    lens_ids, lens_probs = (x.reshape(*hidden.shape[:2], -1) for x in lens.run(list(LENS_OUTPUTS), {"hidden": rows}))
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
