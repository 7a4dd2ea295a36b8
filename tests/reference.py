"""transformers references for parity tests: the model a prepared model was exported from, and its generate()
(torch/transformers imported lazily)."""

from __future__ import annotations

from pathlib import Path

from models.catalog import read_manifest


def load_reference_model(model_dir: str | Path):
    """The transformers model (fp32, eval) that a prepared model was exported from, found through its manifest's
    source: the GGUF kept beside the default model, or the source folder of a prepared HF folder."""
    import torch
    from transformers import AutoModelForCausalLM

    model_dir = Path(model_dir)
    source = read_manifest(model_dir).get("source", {})
    if source.get("gguf") and (model_dir / source["gguf"]).is_file():
        model = AutoModelForCausalLM.from_pretrained(model_dir, gguf_file=source["gguf"], dtype=torch.float32)
    elif source.get("kind") == "hf-folder" and Path(source["path"]).is_dir():
        model = AutoModelForCausalLM.from_pretrained(source["path"], dtype=torch.float32)
    else:
        raise FileNotFoundError(f"{model_dir} keeps no reference weights (source: {source or 'unknown'})")
    return model.eval()


def load_hf_model(model_dir: Path, hf_dir: Path | None = None):
    """The reference model in float32: the HF folder `hf_dir` when given, else load_reference_model(model_dir)."""
    import torch
    from transformers import AutoModelForCausalLM

    # Measured here: torch on 2 threads beside ONNX Runtime's spinning pool runs beam search ~20x slower than on 1.
    torch.set_num_threads(1)
    if hf_dir is not None:
        return AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32).eval()
    return load_reference_model(model_dir)


def hf_generate(model, prompt_ids: list[int], max_new_tokens: int, eos_token_ids: list[int], **kwargs):
    """(sequences, scores): generated ids of each returned sequence (cut after the first eos), and the
    sequence scores for beam search (None otherwise)."""
    import torch

    input_ids = torch.tensor([prompt_ids], dtype=torch.long)
    with torch.no_grad():
        out = model.generate(
            input_ids,
            attention_mask=torch.ones_like(input_ids),
            max_new_tokens=max_new_tokens,
            eos_token_id=eos_token_ids,
            pad_token_id=eos_token_ids[0],
            return_dict_in_generate=True,
            output_scores=True,
            top_k=None,
            top_p=None,
            temperature=None,
            **kwargs,
        )
    sequences = [cut_after_eos(row[len(prompt_ids) :].tolist(), eos_token_ids) for row in out.sequences]
    scores = getattr(out, "sequences_scores", None)
    return sequences, None if scores is None else scores.tolist()


def hf_beam_search(model, prompt_ids: list[int], max_new_tokens: int, eos_token_ids: list[int], num_beams: int):
    """transformers beam search returning every beam (length_penalty 1, early_stopping False): (sequences, scores)."""
    return hf_generate(
        model,
        prompt_ids,
        max_new_tokens,
        eos_token_ids,
        do_sample=False,
        num_beams=num_beams,
        num_return_sequences=num_beams,
        length_penalty=1.0,
        early_stopping=False,
    )


def onnx_engine(model_dir: Path):
    """(Engine, tokenizer, eos ids) over a prepared model's ONNX decoder on the CPU: the side a parity test checks."""
    from decoding.engine.engine import Engine
    from runtime.decoder import OnnxDecoder
    from runtime.tokenizer import Tokenizer

    decoder, tokenizer = OnnxDecoder(model_dir, device="cpu"), Tokenizer.from_model_dir(model_dir)
    eos = list(decoder.eos_token_ids)
    return Engine(decoder, tokenizer, eos), tokenizer, eos


def assert_greedy_as_transformers(engine, model, prompts, eos_token_ids: list[int], max_new_tokens: int) -> None:
    """Each prompt's greedy lane is transformers' greedy generate(), token for token."""
    from decoding.chain.spec import LaneSpec

    for prompt in prompts:
        ours = engine.run(prompt, [LaneSpec("greedy")], max_new_tokens=max_new_tokens).lanes[0].token_ids
        (theirs,), _ = hf_generate(model, prompt.ids, max_new_tokens, eos_token_ids, do_sample=False, num_beams=1)
        assert ours == theirs, prompt.text


def assert_beams_as_transformers(engine, model, prompts, eos_token_ids: list[int], num_beams: int,
                                 max_new_tokens: int) -> None:
    """Each prompt's beam lane returns transformers' beam search sequences, their scores within 1e-4."""
    import pytest

    from decoding.chain.spec import LaneSpec

    spec = LaneSpec("beam", num_beams=num_beams, num_return_sequences=num_beams)
    for prompt in prompts:
        lane = engine.run(prompt, [spec], max_new_tokens=max_new_tokens).lanes[0]
        sequences, scores = hf_beam_search(model, prompt.ids, max_new_tokens, eos_token_ids, num_beams)
        assert lane.sequences == sequences, prompt.text
        assert lane.sequence_scores == pytest.approx(scores, abs=1e-4), prompt.text


def cut_after_eos(tokens: list[int], eos_token_ids: list[int]) -> list[int]:
    for i, token in enumerate(tokens):
        if token in eos_token_ids:
            return tokens[: i + 1]
    return tokens


def load_eager_reference(weights: Path):
    """transformers' float32 model from an HF folder or a GGUF file with eager attention (the implementation that
    returns attention weights), for the inspection model's parity tests."""
    import torch
    from transformers import AutoModelForCausalLM

    options = {"dtype": torch.float32, "attn_implementation": "eager"}
    if weights.suffix == ".gguf":
        return AutoModelForCausalLM.from_pretrained(weights.parent, gguf_file=weights.name, **options).eval()
    return AutoModelForCausalLM.from_pretrained(weights, **options).eval()


def attention_and_lens(model, token_ids: list[int]):
    """(attentions [L, H, T, T], lens probabilities [L + 1, T, vocab]) as transformers computes them with
    output_attentions / output_hidden_states: hidden_states[0] is the embedding output, [l] layer l's output,
    [L] is already final-normed (lm_head of it is the logits), so the lens applies model.norm to [0..L-1]."""
    import torch

    with torch.no_grad():
        out = model(torch.tensor([token_ids]), output_attentions=True, output_hidden_states=True)
        layers = len(out.attentions)
        assert len(out.hidden_states) == layers + 1
        rows = [model.model.norm(h) for h in out.hidden_states[:layers]] + [out.hidden_states[layers]]
        probs = torch.stack([torch.softmax(model.lm_head(h)[0], dim=-1) for h in rows])
        assert torch.allclose(model.lm_head(out.hidden_states[layers]), out.logits)
        return torch.cat(out.attentions).numpy(), probs.numpy()


def transformers_processors(model, spec, prompt_length: int, eos_token_ids: list[int]) -> list:
    """transformers' logits processors for a lane (a decoding.chain.spec.LaneSpec), as its generate() builds them from a
    GenerationConfig: which ones, in which order, with which arguments. Every parameter the lane leaves unset is
    given its off value (GenerationConfig's own defaults, such as top_k=50, are not Branchpoint's). A lane's
    processor_order, which transformers lacks, puts the same processors in that order."""
    from transformers import GenerationConfig

    from decoding.chain.parameters import BY_NAME, as_json

    # transformers' own processors only (llama.cpp's samplers are not GenerationConfig keys); an empty list kind
    # (suppress_tokens=()) is unset, as transformers builds a processor for any list it is given
    values = {p.name: as_json(p, getattr(spec, p.name)) for p in BY_NAME.values()
              if p.is_processor and p.in_generation_config}
    values = {name: None if value == [] else value for name, value in values.items()}
    config = GenerationConfig(
        do_sample=spec.do_sample, num_beams=spec.num_beams, eos_token_id=eos_token_ids,
        pad_token_id=eos_token_ids[0], **{name: BY_NAME[name].off if value is None else value
                                          for name, value in values.items()})
    model._prepare_special_tokens(config, kwargs_has_attention_mask=True, device="cpu")  # as generate() does
    processors = list(model._get_logits_processor(config, input_ids_seq_length=prompt_length, device="cpu"))
    if spec.processor_order is None:
        return processors
    by_class = {type(processor).__name__: processor for processor in processors}
    return [by_class[BY_NAME[name].hf] for name in spec.processor_order]


def apply_transformers(processors: list, ids, scores):
    """float32 [rows, vocab] scores through transformers' processors, reading the ids [rows, length]."""
    import numpy as np
    import torch

    ids = torch.as_tensor(np.asarray(ids, dtype=np.int64))
    out = torch.from_numpy(np.array(scores, dtype=np.float32))
    with torch.no_grad():
        for processor in processors:
            out = processor(ids, out)
    return out.numpy()


def generation_model(vocab_size: int):
    """A one-layer Llama of `vocab_size` tokens, random weights: for transformers' generation machinery only."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                         num_attention_heads=1, num_key_value_heads=1)
    return LlamaForCausalLM(config).eval()
