"""A precision variant of the catalog's gemma-3-270m (slow; test.sh prepares its q8_0): llama.cpp's Q8_0 scheme on
a 262,144-token model meets the issue's Q8_0 goals on the teacher-forced text set (mean KL <= 0.005 nats, the same top
token at >= 97 % of positions; measured 0.00082 and 98.3 %), and its greedy lane writes the fp32 model's Chinese."""

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
