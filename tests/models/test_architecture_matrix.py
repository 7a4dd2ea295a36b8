"""The architecture matrix: a tiny random model of each architecture, prepared as a user would (from its Hugging Face
folder with prepare_hf_folder, and from a GGUF file written from the same weights with prepare_gguf), graph-edited,
run by Branchpoint's runtime: greedy ids equal transformers' generate(), every step's logits within 1e-4 of
transformers' forward pass over the same tokens. Each preparation is a child process exporting with optimum (≈ 10-30
s on 2 busy cores), so only Llama from a folder and Gemma 3 from a GGUF run in the quick loop."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from runtime.decoder import OnnxDecoder
from tests.tiny_archs import ARCHITECTURES, build

QUICK = {("llama", "hf"), ("gemma3", "gguf")}
PROMPT_IDS = [5, 17, 40, 99, 120, 7, 33, 61, 8, 250, 42, 19]  # > the tiny Gemma 3's sliding window of 8
STEPS = 10


def cases():
    for architecture in ARCHITECTURES:
        for source in ("hf", "gguf"):
            marks = () if (architecture, source) in QUICK else (pytest.mark.slow,)
            yield pytest.param(architecture, source, id=f"{architecture}-{source}", marks=marks)


@pytest.fixture(scope="module")
def matrix_cache(tmp_path_factory):
    """A cache of its own for the prepared tiny models (the user's is never touched)."""
    root = tmp_path_factory.mktemp("matrix-cache")
    previous = os.environ.get("BRANCHPOINT_CACHE_DIR")
    os.environ["BRANCHPOINT_CACHE_DIR"] = str(root)
    yield root
    if previous is None:
        os.environ.pop("BRANCHPOINT_CACHE_DIR", None)
    else:
        os.environ["BRANCHPOINT_CACHE_DIR"] = previous


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    built: dict = {}

    def get(architecture: str):
        if architecture not in built:
            built[architecture] = build(architecture, tmp_path_factory.mktemp(f"tiny-{architecture}"))
        return built[architecture]

    return get


def prepared(tiny, source: str) -> Path:
    from models.prepare import prepare_gguf, prepare_hf_folder

    name = f"tiny-{tiny.architecture}-{source}"
    if source == "hf":
        return prepare_hf_folder(tiny.hf_dir, name=name)
    return prepare_gguf(tiny.gguf, name=name)


def runtime_greedy(model_dir: Path, prompt_ids: list[int], steps: int) -> tuple[list[int], list[np.ndarray]]:
    from models.open_model import open_model

    decoder = open_model(model_dir, device="cpu").decoder
    cache, logits = decoder.prefill(prompt_ids)
    ids, rows = [], [np.asarray(logits).reshape(-1)]
    for _ in range(steps):
        ids.append(int(np.argmax(rows[-1])))
        cache, logits = decoder.step(cache, [0], [ids[-1]])
        rows.append(np.asarray(logits).reshape(-1))
    return ids, rows[:-1]


def transformers_reference(hf_dir: Path, prompt_ids: list[int], steps: int) -> tuple[list[int], np.ndarray]:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32).eval()
    ids = torch.tensor([prompt_ids])
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=steps, min_new_tokens=steps,
                             do_sample=False, top_k=None, top_p=None, temperature=None, eos_token_id=None,
                             pad_token_id=0)
        sequence = out[0].tolist()
        logits = model(torch.tensor([sequence[:-1]])).logits[0, len(prompt_ids) - 1 :].numpy()
    return sequence[len(prompt_ids) :], logits


@pytest.mark.parametrize(("architecture", "source"), list(cases()))
def test_prepared_tiny_model_matches_transformers(architecture, source, matrix_cache, tiny_models):
    from models.catalog import read_manifest

    tiny = tiny_models(architecture)
    model_dir = prepared(tiny, source)
    manifest = read_manifest(model_dir)
    # transformers loads a Mistral GGUF (llama.cpp writes it as llama) as Llama: the same layers
    loaded_as = {("mistral", "gguf"): "llama"}.get((architecture, source), architecture)
    assert manifest["model"]["model_type"] in (loaded_as, f"{loaded_as}_text")
    assert "last_position_lm_head" in manifest["graph_edits"]
    ids, rows = runtime_greedy(model_dir, PROMPT_IDS, STEPS)
    expected_ids, expected_logits = transformers_reference(tiny.hf_dir, PROMPT_IDS, STEPS)
    assert ids == expected_ids
    assert float(np.max(np.abs(np.stack(rows) - expected_logits))) < 1e-4
    if architecture == "gemma3":  # the edits its sliding-window layers need; in place with a mask of their own
        assert {"position_ids_input", "sliding_window_by_position"} <= set(manifest["graph_edits"])
        assert manifest["in_place_kv"] == {"applied": True}
        assert manifest["model"]["sliding_window_layers"] == [0, 1, 2, 3, 4]
        assert OnnxDecoder(model_dir, "cpu").io.sliding_window == 8
    elif architecture == "gpt2":  # its fused qkv attention is not one the fused-attention edit matches: the
        # export's cache, and the manifest says why
        assert manifest["in_place_kv"]["applied"] is False and "fused Attention" in manifest["in_place_kv"]["why_not"]
    else:
        assert manifest["in_place_kv"] == {"applied": True}
    if source == "gguf":
        assert manifest["source"]["kind"] == "gguf-file"
        assert manifest["source"]["architecture"] == loaded_as


def test_gemma3_rows_of_different_lengths_past_the_window_match_transformers(matrix_cache, tiny_models):
    """Rows cut back to different lengths share one physical cache (gaps masked); with Gemma 3's sliding window (8
    here) crossed, each row's logits still equal transformers' on that row's own tokens."""
    import torch
    from transformers import AutoModelForCausalLM

    from models.open_model import open_model

    tiny = tiny_models("gemma3")
    decoder = open_model(prepared(tiny, "gguf"), device="cpu").decoder
    assert decoder.io.in_place and decoder.io.sliding_window == 8
    sequence = list(PROMPT_IDS)
    state, logits = decoder.prefill(sequence)
    for _ in range(8):
        sequence.append(int(np.argmax(logits)))
        state, batch = decoder.step(state, [0], [sequence[-1]])
        logits = batch[0]
    keep, tokens = [6, None, 15], [11, 12, 13]
    state, batch = decoder.step(state, [0, 0, 0], tokens, keep)
    model = AutoModelForCausalLM.from_pretrained(tiny.hf_dir, dtype=torch.float32).eval()
    for row, (k, token) in enumerate(zip(keep, tokens, strict=True)):
        ids = sequence[:k] + [token]
        with torch.no_grad():
            expected = model(torch.tensor([ids])).logits[0, -1].numpy()
        assert float(np.max(np.abs(batch[row] - expected))) < 1e-4, f"row {row} ({len(ids)} tokens)"


def test_gemma3_knockout_rows_past_the_window_match_transformers(matrix_cache, tiny_models):
    """Why A, not B on Gemma 3: a knock-out row hides a position from every later query in the global layers and,
    within their window, in the sliding ones; transformers under the same two 4D masks gives the same logits."""
    import torch
    from transformers import AutoModelForCausalLM

    from models.open_model import open_model
    from runtime.knockout import Knockout

    tiny = tiny_models("gemma3")
    decoder = open_model(prepared(tiny, "gguf"), device="cpu").decoder
    ids = PROMPT_IDS + [3, 77, 140, 9]  # 16 tokens: twice the window
    groups = [[0], [5], [7], [8], [12], [2, 9, 13]]
    candidates = [17, 250]
    rows = Knockout(decoder, max_rows=3).run(ids, groups, candidates)
    model = AutoModelForCausalLM.from_pretrained(tiny.hf_dir, dtype=torch.float32, attn_implementation="eager").eval()
    length, window = len(ids), model.config.sliding_window
    query, key = torch.arange(length)[:, None], torch.arange(length)[None, :]
    for r, group in enumerate(groups):
        hidden = torch.zeros(length, dtype=torch.bool)
        hidden[group] = True
        allowed = (key <= query) & ~(hidden[None, :] & (key < query))
        masks = {"full_attention": allowed, "sliding_attention": allowed & (query - key < window)}
        masks = {k: torch.where(v, 0.0, float("-inf"))[None, None] for k, v in masks.items()}
        with torch.no_grad():
            expected = model(torch.tensor([ids]), attention_mask=masks).logits[0, -1].numpy()
        assert np.allclose(rows.logits[r], expected[candidates], atol=1e-4), group
        assert rows.top_ids[r] == int(expected.argmax())
    assert np.abs(rows.logits - rows.base_logits).max(axis=1).min() > 1e-3  # every row moved: rows told apart


@pytest.mark.slow
def test_gemma3_inspection_model_matches_transformers_past_the_window(matrix_cache, tiny_models):
    """Explain on Gemma 3: its inspection model (eager attention over sliding-window and global layers, the logit
    lens through its final norm) equals transformers' on a sequence longer than the window."""
    from models import inspection
    from runtime.inspection import InspectionModel
    from tests.reference import attention_and_lens, load_eager_reference

    tiny = tiny_models("gemma3")
    model_dir = prepared(tiny, "gguf")
    inspection.prepare_inspection(model_dir)
    ids = [2, *PROMPT_IDS]
    arrays = InspectionModel(model_dir, device="cpu").run(ids)
    attentions, _ = attention_and_lens(load_eager_reference(tiny.hf_dir), ids)
    assert arrays.attentions.shape == attentions.shape == (6, 4, len(ids), len(ids))
    assert float(np.abs(arrays.attentions - attentions).max()) < 1e-4
    assert float(arrays.attentions[0, :, -1, :-8].max()) == 0.0  # a sliding layer sees the last 8 positions only
