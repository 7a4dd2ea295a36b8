"""A real llama.cpp server (scripts/llama_cpp.sh's build) serving the default model's own GGUF (Q4_1), beside the
local ONNX lane of the same model (fp32, the GGUF dequantized): the same greedy tokens, and each step's top-20
log-probabilities within what the two numerical paths explain. llama.cpp multiplies the Q4_1 weights with 8-bit
quantized activations; the ONNX model multiplies the dequantized weights in fp32; so their logits differ by the
activation rounding only. Measured here (3 prompts x 24 tokens, whole vocabulary read each step): see
MAX_TOP20_DELTA. Slow: CI builds the server (test.sh) and prepares the model."""

from __future__ import annotations

import numpy as np
import pytest

from decoding.chain.spec import LaneSpec
from decoding.engine.replay import compare, replay
from decoding.records import jsonio
from models.sources import GGUF_NAME
from runtime.served.launch import start_llama_server
from tests.llama_cpp_build import BUILD_HINT, server_binary

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

PROMPTS = ["The capital of France is", "Although I was tired, I still decided to", "我虽然很累，但还是决定"]
TOKENS = 24
# The largest |Δ log p| over every step's top-20 (the local lane's ids) seen on this machine, 3 prompts x 24 steps:
# 0.064 (median 0.012); the bound leaves room for another CPU's int8 kernels.
MAX_TOP20_DELTA = 0.15


@pytest.fixture(scope="module")
def server(default_model_dir, tmp_path_factory):
    binary = server_binary()
    if binary is None:
        pytest.skip(f"llama-server is not built: {BUILD_HINT}")
    gguf = default_model_dir / GGUF_NAME
    if not gguf.is_file():
        pytest.skip(f"the prepared default model keeps no {GGUF_NAME}")
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    running = start_llama_server(binary, gguf, log, slots=4, threads=2, extra=("--no-repack",))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def model(default_model_dir):
    from models.open_model import open_model

    return open_model(default_model_dir, device="cpu")


def run(model, prompt: str, specs, served_models=None):
    from models.open_model import LaneModels

    engine = model.engine(models=served_models or LaneModels(model, "cpu"))
    return engine.run(model.encode_prompt(prompt), specs, max_new_tokens=TOKENS, model=model.info), engine


def test_the_served_lane_agrees_with_the_local_lane(server, model):
    name = f"llamacpp+{server.url}?alternatives=all"
    deltas = []
    for prompt in PROMPTS:
        trace, _ = run(model, prompt, [LaneSpec("local"), LaneSpec("served", model=name)])
        local, served = trace.lanes
        assert served.error is None and served.model.tokenizer is None  # the same tokenizer: token by token
        assert served.token_ids == local.token_ids, prompt
        for a, b in zip(local.steps, served.steps, strict=True):
            served_p = {entry.id: entry.prob for entry in b.top_raw}
            for entry in a.top_raw:
                assert entry.id in served_p  # the same top-20, in some order
                deltas.append(abs(np.log(entry.prob) - np.log(served_p[entry.id])))
            assert b.unseen_mass == 0.0
    print(f"top-20 |Δ log p|: max {max(deltas):.4f}, median {np.median(deltas):.4f} over {len(deltas)}")
    assert max(deltas) < MAX_TOP20_DELTA


def test_a_partial_served_lane_beside_a_sampled_one_and_its_replay(server, model, tmp_path):
    """alternatives=100: greedy still the local tokens; a sampled lane and a fan-out's members run concurrently on
    their own slots; the run file replays exactly (llama.cpp on fixed slots is deterministic)."""
    name = f"llamacpp+{server.url}?alternatives=100"
    specs = [LaneSpec("local"), LaneSpec("served", model=name),
             LaneSpec("served sample", do_sample=True, temperature=0.8, seed=3, model=name),
             LaneSpec("served sample 2", do_sample=True, temperature=0.8, seed=4, model=name)]
    trace, engine = run(model, PROMPTS[0], specs)
    local, served = trace.lanes[:2]
    assert served.token_ids == local.token_ids
    assert all(0.0 < step.unseen_mass < 0.5 for step in served.steps)
    recorded = jsonio.loads(jsonio.dumps(trace))
    assert compare(recorded, replay(engine, recorded)) == []


def test_a_server_stopped_mid_run_ends_its_lane_only(default_model_dir, model, tmp_path):
    binary = server_binary()
    if binary is None:
        pytest.skip(f"llama-server is not built: {BUILD_HINT}")
    own = start_llama_server(binary, default_model_dir / GGUF_NAME, tmp_path / "log", slots=1,
                             extra=("--no-repack",))
    name = f"llamacpp+{own.url}"

    def stop_at_step_3(index: int, record) -> None:
        if index == 1 and record.step == 3:
            own.stop()

    from models.open_model import LaneModels

    engine = model.engine(models=LaneModels(model, "cpu"))
    trace = engine.run(model.encode_prompt(PROMPTS[0]), [LaneSpec("local"), LaneSpec("served", model=name)],
                       max_new_tokens=8, model=model.info, on_step=stop_at_step_3)
    own.stop()
    local, served = trace.lanes
    assert local.finish_reason == "length" and len(local.steps) == 8
    assert served.finish_reason == "error" and len(served.steps) == 4
    assert "connection refused" in served.error or "closed the connection" in served.error
