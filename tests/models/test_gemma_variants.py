"""Precision variants of the catalog's gemma-3-270m (slow). Its q8_0 (test.sh prepares it): llama.cpp's Q8_0 scheme
on a 262,144-token model meets the issue's Q8_0 goals on the teacher-forced text set (mean KL <= 0.005 nats, the same
top token at >= 97 % of positions; measured 0.00082 and 98.3 %), and its greedy lane writes the fp32 model's Chinese.
Its gguf variant (prepared here, in a cache of its own): the GGUF's own Q4_K / Q5_0 / Q6_K / Q8_0 blocks run
exactly, every matrix the fp32 model's weights, the same greedy tokens in English and Chinese."""

from __future__ import annotations

import os

import pytest

from decoding.chain.spec import LaneSpec
from models.catalog import read_manifest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def q8_0_dir(gemma_model_dir):
    path = gemma_model_dir.parent / "gemma-3-270m-q8_0"
    if not (path / "model.onnx").is_file():
        message = "gemma-3-270m-q8_0 is not prepared (main.py prepare --variant q8_0 --base gemma-3-270m)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def test_q8_0_meets_its_goals_on_the_text_set(q8_0_dir):
    board = read_manifest(q8_0_dir)["variant"]["teacher_forced"]
    assert board["positions"] > 1000 and board["mean_kl"] <= 0.005 and board["same_top"] >= 0.97, board


def test_q8_0_writes_the_fp32_models_chinese(gemma_model_dir, q8_0_dir):
    from models.open_model import open_model

    texts = []
    for folder in (gemma_model_dir, q8_0_dir):
        model = open_model(folder, device="cpu")
        lane = model.engine().run(model.encode_prompt("我虽然很累，但还是决定"), [LaneSpec("greedy")], max_new_tokens=8)
        texts.append(model.tokenizer.decode(lane.lanes[0].token_ids))
    assert texts[0] == texts[1] and texts[0].startswith("去参加这次的比赛"), texts


@pytest.fixture(scope="module")
def gguf_variant(gemma_model_dir, tmp_path_factory):
    """gemma-3-270m's gguf variant, prepared from a copy of the fp32 model in a cache of its own (~1-2 min)."""
    import shutil

    from models.prepare import link_tree
    from models.variants import prepare_variant

    cache = tmp_path_factory.mktemp("gemma-gguf-cache")
    base = cache / "models" / gemma_model_dir.name
    base.mkdir(parents=True)
    link_tree(gemma_model_dir, base)
    shutil.rmtree(base / "inspection", ignore_errors=True)
    for name in ("manifest.json", "model.onnx", "model.onnx_data"):  # onnx refuses hard-linked external data
        (base / name).unlink(missing_ok=True)
        shutil.copy2(gemma_model_dir / name, base / name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BRANCHPOINT_CACHE_DIR", str(cache))
        yield prepare_variant("gguf", gemma_model_dir.name)


def test_gguf_runs_the_ggufs_own_blocks_exactly(gguf_variant):
    record = read_manifest(gguf_variant)["variant"]
    transform = record["transform"]
    assert transform["by_type"] == {"Q5_0": 81, "Q4_K": 27, "Q6_K": 9, "Q8_0": 9}, transform
    assert transform["max_abs_weight_diff_by_type"] == dict.fromkeys(transform["by_type"], 0.0)
    assert transform["max_abs_weight_diff"] == 0.0 and transform["lm_head_max_abs_diff"] == 0.0
    assert transform["kept_fp32"] == {"/lm_head/MatMul": "Q8_0"}
    board = record["teacher_forced"]
    assert board["positions"] > 1000 and board["max_kl"] < 1e-6 and board["same_top"] >= 0.999, board
    assert record["greedy"]["ids"] == record["greedy"]["base_ids"]


@pytest.mark.parametrize("prompt", ["Once upon a time, in a small village by the sea,", "我虽然很累，但还是决定"])
def test_gguf_writes_the_fp32_models_greedy_tokens(gemma_model_dir, gguf_variant, prompt):
    from models.open_model import open_model

    tokens = []
    for folder in (gemma_model_dir, gguf_variant):
        model = open_model(folder, device="cpu")
        lane = model.engine().run(model.encode_prompt(prompt), [LaneSpec("greedy")], max_new_tokens=16)
        tokens.append(lane.lanes[0].token_ids)
    assert tokens[0] == tokens[1] and len(tokens[0]) == 16, tokens


def test_gguf_logits_are_the_fp32_models(gemma_model_dir, gguf_variant):
    """The folded blocks are the fp32 weights bit for bit; only the Q4_K MatMulNBits products round otherwise."""
    import numpy as np
    from tokenizers import Tokenizer

    from models.validate import kv_layout, open_session
    from models.variants import next_token_logits

    ids = Tokenizer.from_file(str(gguf_variant / "tokenizer.json")).encode("我虽然很累，但还是决定去").ids
    logits = []
    for folder in (gemma_model_dir, gguf_variant):
        session = open_session(folder / "model.onnx")
        logits.append(next_token_logits(session, kv_layout(session), ids))
    assert np.max(np.abs(logits[0] - logits[1])) < 1e-4
