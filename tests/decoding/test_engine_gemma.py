"""Parity on the catalog's gemma-3-270m (slow; test.sh prepares it): greedy and beam lanes token-identical to
transformers generate() on the same dequantized GGUF, on English and Chinese prompts longer and shorter than a
row's first chunk; fan-outs, branches and the default five lanes run on it; the CLI writes Chinese with it; Explain
reads its 18 layers, its lens ending on the lane's own choices."""

from __future__ import annotations

import pytest

from decoding.analysis.fanout import fan_out
from decoding.chain.spec import LaneSpec, assign_seeds, default_lanes, parse_lane
from decoding.records.trace import PromptInfo
from tests.reference import assert_beams_as_transformers, assert_greedy_as_transformers, load_hf_model, onnx_engine

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

RAW_PROMPTS = [
    "The capital of France is",
    "Although I was tired, I still decided to",
    "我虽然很累，但还是决定",
    "今天天气不错，适合去",
]


@pytest.fixture(scope="module")
def real(gemma_model_dir):
    return onnx_engine(gemma_model_dir)


@pytest.fixture(scope="module")
def reference(gemma_model_dir):
    return load_hf_model(gemma_model_dir)  # the kept GGUF, dequantized by transformers (≈ 1.5 min)


def prompts(tokenizer) -> list[PromptInfo]:
    return [PromptInfo(text, tokenizer.encode(text)) for text in RAW_PROMPTS]


def test_the_prompt_starts_with_bos_and_eos_ids_are_gemmas(real):
    _, tokenizer, eos = real
    expected = [2, 237169, 26990, 237614, 240128, 236900, 237678, 17093, 43581]  # <bos> 我 虽然 很 累 ， 但 还是 决定
    assert tokenizer.encode("我虽然很累，但还是决定") == expected
    assert eos == [1, 106]  # <eos>, <end_of_turn>


def test_greedy_lane_equals_transformers_greedy(real, reference):
    engine, tokenizer, eos = real
    assert_greedy_as_transformers(engine, reference, prompts(tokenizer), eos, 24)
    chinese = engine.run(prompts(tokenizer)[2], [LaneSpec("greedy")], max_new_tokens=8).lanes[0]
    assert tokenizer.decode(chinese.token_ids).startswith("去参加这次的比赛。")


@pytest.mark.parametrize("num_beams", [2, 4])
def test_beam_lanes_equal_transformers_beam_search(real, reference, num_beams):
    engine, tokenizer, eos = real
    assert_beams_as_transformers(engine, reference, prompts(tokenizer)[1:3], eos, num_beams, 12)


def test_default_lanes_fan_out_and_branch_run_on_gemma(real):
    engine, tokenizer, _ = real
    prompt = prompts(tokenizer)[3]
    alone = engine.run(prompt, [LaneSpec("greedy")], max_new_tokens=12).lanes[0].token_ids
    together = engine.run(prompt, assign_seeds(default_lanes(), 0), max_new_tokens=12)
    assert together.lane("greedy").token_ids == alone and len(together.lanes) == 5
    members = fan_out(parse_lane("sample:temperature=1.0,seed=3"), 8)
    fan = engine.run(prompt, members, max_new_tokens=6)
    assert len(fan.lanes) == 8 and all(len(lane.token_ids) == 6 for lane in fan.lanes)
    assert len({tuple(lane.token_ids) for lane in fan.lanes}) > 1  # the seeds part


def test_cli_writes_chinese_with_gemma(capsys, gemma_model_dir):
    import main

    argv = ["run", "--model", "gemma-3-270m", "--prompt", "我虽然很累，但还是决定", "--lane", "greedy",
            "--max-new-tokens", "8"]
    assert main.main(argv) == 0
    assert "去参加这次的比赛" in capsys.readouterr().out.replace("▲", "")  # ▲ marks near-ties between tokens


def test_explain_reads_gemmas_18_layers_and_its_lens_ends_on_the_lanes_own_choices(real, gemma_model_dir, tmp_path):
    """Explain on gemma (its inspection model prepared on first use): attention of 18 layers × 4 heads (the sliding
    windows of its local layers recorded), every row a distribution over the positions up to it; the lens's last
    row (the model's own output) puts greedy's next token first at every generated position, as the engine chose
    it."""
    import json

    import numpy as np

    import main

    engine, tokenizer, _ = real
    prompt = prompts(tokenizer)[2]
    lane = engine.run(prompt, [LaneSpec("greedy")], max_new_tokens=6).lanes[0]
    continuation = tokenizer.decode(lane.token_ids[:5])
    path = tmp_path / "explain.json"
    assert main.main(["explain", "--model", "gemma-3-270m", "--prompt", prompt.text, "--continuation", continuation,
                      "--json", str(path), "--device", "cpu"]) == 0
    data = json.loads(path.read_text())
    ids = [token["id"] for token in data["tokens"]]
    assert ids == [*prompt.ids, *lane.token_ids[:5]]
    weights = np.array(data["attention"]["weights"], dtype=np.float64)
    assert (data["attention"]["layers"], data["attention"]["heads"]) == (18, 4) and weights.shape[:2] == (18, 4)
    assert data["windows"] == [None if layer % 6 == 5 else 512 for layer in range(18)]  # every sixth layer global
    assert np.allclose(weights.sum(axis=-1), 1.0, atol=2e-3) and np.allclose(np.triu(weights, 1), 0.0)
    last = len(data["logit_lens"]) - 1
    own = [data["logit_lens"][last][position][0]["id"] for position in range(len(ids))]
    assert own[len(prompt.ids) - 1:] == lane.token_ids[:6]
