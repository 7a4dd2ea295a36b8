"""A lane on a served model against a local one: llama.cpp's server (scripts/llama_cpp.sh's build) serving the
default model's own GGUF on this machine, a greedy lane on it beside the same greedy lane on the local ONNX model,
time per step measured interleaved in one run (the run minus its 1-token run, over the extra tokens). The served
lane asks for the top 1,000 and for the whole vocabulary (49,152 alternatives a step: the JSON is most of its cost)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.context import PROMPT, BenchContext
from bench.report import Row, SkipItem
from bench.timing import interleaved, medians, paired_ratio


def measure_served(ctx: BenchContext) -> list[Row]:
    from decoding.chain.spec import LaneSpec
    from decoding.engine.engine import Engine
    from decoding.records.trace import PromptInfo
    from models.served_lane import served_lane_model
    from models.sources import GGUF_NAME
    from runtime.served.launch import built_server, start_llama_server

    binary, gguf = built_server(), ctx.model_dir / GGUF_NAME
    if binary is None:
        raise SkipItem("llama-server is not built (scripts/llama_cpp.sh)")
    if not gguf.is_file():
        raise SkipItem(f"the model keeps no {GGUF_NAME}")
    tokens = ctx.sizes.new_tokens
    log = Path(tempfile.mkdtemp(prefix="bench-llama-server-")) / "server.log"
    with start_llama_server(binary, gguf, log, slots=1, threads=ctx.threads or 2, extra=("--no-repack",)) as server:
        prompt = PromptInfo(PROMPT, ctx.prompt_ids)

        def engine_for(name: str | None) -> Engine:
            models = (lambda n: served_lane_model(n, ctx.tokenizer, ctx.decoder.vocab_size)) if name else None
            return Engine(ctx.decoder, ctx.tokenizer, ctx.decoder.eos_token_ids, models=models)

        def lane_run(name: str | None, count: int):
            engine, spec = engine_for(name), LaneSpec("greedy", model=name, min_new_tokens=count)
            return lambda: engine.run(prompt, [spec], max_new_tokens=count)

        names = {"local": None, "served top 1000": f"llamacpp+{server.url}?alternatives=1000",
                 "served whole vocabulary": f"llamacpp+{server.url}?alternatives=all"}
        candidates = {}
        for label, name in names.items():
            candidates[label] = lane_run(name, tokens)
            candidates[f"{label} (1 token)"] = lane_run(name, 1)
        samples = interleaved(candidates, ctx.sizes.run_reps, warmup=1)
    seconds = medians(samples)
    per_step = {label: (seconds[label] - seconds[f"{label} (1 token)"]) / (tokens - 1) * 1000 for label in names}
    item = "served lane"
    rows = [Row(item, f"{label}: greedy, ms per step ({tokens} tokens)", per_step[label], unit="ms")
            for label in names]
    for label in list(names)[1:]:
        rows.append(Row(item, f"{label} / local (whole {tokens}-token run)", paired_ratio(samples, label, "local"),
                        note="llama-server Q4_1, 1 slot, 2 threads; local ONNX fp32"))
    return rows
