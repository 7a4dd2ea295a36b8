"""Item 7, the GPU check, for one lent GPU machine (see bench/results.md, "GPU"). Two halves:

    python -m bench.gpu_check skeleton      # HERE: graphs without weights + the tiny model, into .gpu/models
    bash bench/gpu_check.sh                 # THERE: reassembles onnxruntime-gpu, runs `check`

The 539 MB model cannot travel, so the weights are stripped here (the graph stays: the exact fp32 export and
the fp16 export of the default model) and refilled there with random values of the same shapes: timing does
not depend on the weights. Correctness on CUDA is checked against the CPU EP with the tiny test model. The
check measures, per precision: single-row and 8-row steps with the KV cache on the device through IO binding
(runtime.OnnxDecoder) vs the same steps through plain `session.run` with numpy feeds (host round trips), a
step at context 1000, a 500-token prefill, the row summary of 8 rows, the GPU's read bandwidth and the step /
floor ratio, and fp16 vs fp32 greedy agreement (on random weights: a check of drift, not of quality)."""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script there: runtime/ must import

STRIP_MIN_ELEMENTS = 4096
SIDE_FILES = ("config.json", "generation_config.json")
NP_TYPES = {1: np.float32, 10: np.float16}


# ------------------------------------------------------------------------------------------------- here


def skeleton(model_dir: Path, out_dir: Path) -> Path:
    """model.onnx with every weight matrix emptied (dims kept) and a list of them, plus the side files."""
    import onnx

    model = onnx.load(str(model_dir / "model.onnx"))
    stripped = []
    for tensor in model.graph.initializer:
        if int(np.prod(tensor.dims)) >= STRIP_MIN_ELEMENTS:
            stripped.append({"name": tensor.name, "dims": list(tensor.dims), "type": tensor.data_type})
            tensor.ClearField("raw_data")
            tensor.ClearField("float_data")
            tensor.ClearField("int32_data")
    out_dir.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out_dir / "skeleton.onnx"))
    (out_dir / "stripped.json").write_text(json.dumps(stripped), encoding="utf-8")
    for name in SIDE_FILES:
        if (model_dir / name).is_file():
            shutil.copy2(model_dir / name, out_dir / name)
    return out_dir


def make_skeletons(out: Path) -> None:
    from bench.precision import export_fp16, variant_dir
    from models.catalog import default_model_dir
    from models.graph_edits import edited_model_dir
    from tests.tiny_model import build_tiny_model

    if not (out / "tiny" / "model.onnx").is_file():
        build_tiny_model(out / "tiny")
        shutil.rmtree(out / "tiny-hf")  # only the ONNX folder travels
    if not (out / "tiny-prepared" / "model.onnx").is_file():  # the prepared graph: its KV cache written in place
        edited_model_dir(out / "tiny", out / "tiny-prepared")
    skeleton(default_model_dir(), out / "fp32")
    fp16 = variant_dir(default_model_dir())
    if not (fp16 / "model.onnx").is_file():
        export_fp16(default_model_dir(), fp16)
    skeleton(fp16, out / "fp16")


# ------------------------------------------------------------------------------------------------- there


def refill(skeleton_dir: Path, out_dir: Path, seed: int = 0) -> Path:
    """A runnable model folder from a skeleton: the stripped weights drawn from N(0, 0.02^2)."""
    import onnx

    model = onnx.load(str(skeleton_dir / "skeleton.onnx"))
    shapes = {entry["name"]: entry for entry in json.loads((skeleton_dir / "stripped.json").read_text())}
    rng = np.random.default_rng(seed)
    for tensor in model.graph.initializer:
        entry = shapes.get(tensor.name)
        if entry is not None:
            values = rng.standard_normal(entry["dims"], dtype=np.float32) * np.float32(0.02)
            tensor.raw_data = values.astype(NP_TYPES[entry["type"]]).tobytes()
    out_dir.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out_dir / "model.onnx"))
    for name in SIDE_FILES:
        if (skeleton_dir / name).is_file():
            shutil.copy2(skeleton_dir / name, out_dir / name)
    return out_dir


def median_ms(fn, reps: int = 20, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return 1e3 * statistics.median(samples)


class BoundStepper:
    """Steps `rows` rows through OnnxDecoder (IO binding; KV stays on the device)."""

    def __init__(self, decoder, length: int, rows: int):
        ids = np.random.default_rng(0).integers(3, decoder.vocab_size, length).tolist()
        state, _ = decoder.prefill(ids)
        self.decoder, self.rows = decoder, list(range(rows))
        self.state, _ = decoder.step(state, [0] * rows, [42] * rows)

    def __call__(self) -> None:
        self.state, _ = self.decoder.step(self.state, self.rows, [42] * len(self.rows))


class HostStepper:
    """The same step through plain session.run with numpy feeds: logits and KV go to the host and back."""

    def __init__(self, decoder, length: int, rows: int):
        if decoder.io.in_place:  # plain runs feed the graph as exported (its Concat-grown cache)
            from runtime.decoder import OnnxDecoder

            decoder = OnnxDecoder(decoder.model_dir, decoder.device, in_place=False)
        io, self.session = decoder.io, decoder.session
        self.past_names = io.past_names
        self.outputs = ["logits", *io.present_names]
        dtype = NP_TYPES[io.kv_elem_type]
        self.kv = [np.zeros((rows, io.kv_heads, length, io.head_dim), dtype) for _ in io.past_names]
        self.rows, self.length = rows, length
        self.has_positions = io.has_position_ids

    def __call__(self) -> None:
        feeds = {
            "input_ids": np.full((self.rows, 1), 42, np.int64),
            "attention_mask": np.ones((self.rows, self.length + 1), np.int64),
        }
        if self.has_positions:
            feeds["position_ids"] = np.full((self.rows, 1), self.length, np.int64)
        feeds.update(zip(self.past_names, self.kv, strict=True))
        outputs = self.session.run(self.outputs, feeds)
        self.kv = [present[:, :, 1:, :] for present in outputs[1:]]  # keep the length fixed between calls


def gpu_read_bandwidth() -> float:
    """Best bytes/s of torch.sum over a 4 GiB fp32 tensor on the GPU."""
    import torch

    data = torch.ones(2**30, dtype=torch.float32, device="cuda")
    best = float("inf")
    for _ in range(6):
        torch.cuda.synchronize()
        start = time.perf_counter()
        data.sum()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    del data
    torch.cuda.empty_cache()
    return 4 * 2**30 / best


def measure_variant(model_dir: Path, device: str, bandwidth: float) -> dict:
    from bench.bandwidth import weight_bytes
    from runtime.decoder import OnnxDecoder

    decoder = OnnxDecoder(model_dir, device=device)
    decoder.warmup()
    result = {"provider": decoder.provider}
    for rows, length in ((1, 50), (8, 50), (1, 1000)):
        if decoder.max_positions and length + 2 > decoder.max_positions:
            continue  # a small test model: no context 1000
        result[f"bound_{rows}x{length}_ms"] = median_ms(BoundStepper(decoder, length, rows))
        result[f"host_{rows}x{length}_ms"] = median_ms(HostStepper(decoder, length, rows))
    ids = np.random.default_rng(1).integers(3, decoder.vocab_size, 500).tolist()
    result["prefill_500_ms"] = median_ms(lambda: decoder.prefill(ids), reps=5, warmup=1)
    logits = np.random.default_rng(2).standard_normal((8, decoder.vocab_size)).astype(np.float32)
    result["row_summary_8_rows_ms"] = median_ms(lambda: decoder.summarize(logits, 20))
    result["floor_ms"] = 1e3 * weight_bytes(model_dir / "model.onnx") / bandwidth
    result["step_over_floor"] = result["bound_1x50_ms"] / result["floor_ms"]
    result["host_over_bound_1x50"] = result["host_1x50_ms"] / result["bound_1x50_ms"]
    return result


def cuda_vs_cpu(tiny_dir: Path, cpu_in_place: bool = True) -> dict:
    """Max |logits diff| between the CUDA and CPU EPs over prefill, fork, reorder and 20 greedy steps (on a
    prepared graph: CUDA with its KV cache in place, the CPU as exported when `cpu_in_place` is False)."""
    from runtime.decoder import OnnxDecoder

    gpu = OnnxDecoder(tiny_dir, device="cuda")
    cpu = OnnxDecoder(tiny_dir, device="cpu", in_place=cpu_in_place)
    ids = [1, 5, 9, 33, 70, 12, 8]
    (sg, lg), (sc, lc) = gpu.prefill(ids), cpu.prefill(ids)
    worst, same = float(np.abs(lg - lc).max()), True
    rows, tokens = [0, 0, 0], [int(lc.argmax())] * 3
    for step in range(20):
        (sg, lg), (sc, lc) = gpu.step(sg, rows, tokens), cpu.step(sc, rows, tokens)
        worst = max(worst, float(np.abs(lg - lc).max()))
        same &= bool((lg.argmax(-1) == lc.argmax(-1)).all())
        rows, tokens = ([2, 0, 1] if step % 2 else [0, 1, 2]), lc.argmax(-1).tolist()
    summary_gpu, summary_cpu = gpu.summarize(lc, 20), cpu.summarize(lc, 20)  # the same logits on both
    return {
        "max_abs_diff": worst,
        "argmax_identical": same,
        "summary_max_weight_diff": float(np.abs(summary_gpu.weights - summary_cpu.weights).max()),
        "summary_top_ids_identical": bool((summary_gpu.top_ids == summary_cpu.top_ids).all()),
        "provider": gpu.provider,
        "cuda_kv_in_place": gpu.io.in_place,
    }


def fp16_agreement(fp32_dir: Path, fp16_dir: Path, device: str) -> float:
    from bench.precision import greedy_agreement
    from runtime.decoder import OnnxDecoder

    reference, other = OnnxDecoder(fp32_dir, device=device), OnnxDecoder(fp16_dir, device=device)
    rng = np.random.default_rng(2)
    prompts = [rng.integers(3, reference.vocab_size, 12).tolist() for _ in range(5)]
    return statistics.mean(greedy_agreement(reference, other, ids, 64)[0] for ids in prompts)


def check(models: Path, out: Path, device: str) -> dict:
    import onnxruntime as ort

    try:
        import torch  # loads CUDA/cuDNN from the NVIDIA wheels before ORT looks for them
    except ImportError:
        torch = None
    if hasattr(ort, "preload_dlls"):
        ort.preload_dlls()
    report = {"onnxruntime": ort.__version__, "providers": ort.get_available_providers()}
    if torch is not None and torch.cuda.is_available():
        report["gpu"] = torch.cuda.get_device_name(0)
    if (models / "tiny").is_dir() and device == "cuda":
        report["cuda_vs_cpu_tiny"] = cuda_vs_cpu(models / "tiny")
    if (models / "tiny-prepared").is_dir() and device == "cuda":
        report["cuda_in_place_vs_cpu_exported_tiny"] = cuda_vs_cpu(models / "tiny-prepared", cpu_in_place=False)
    bandwidth = gpu_read_bandwidth() if device == "cuda" else 10e9
    report["read_bandwidth_GBps"] = bandwidth / 1e9
    filled = {}
    for variant in ("fp32", "fp16"):
        if (models / variant / "skeleton.onnx").is_file():
            filled[variant] = refill(models / variant, Path("/tmp/bench-gpu") / variant)
            report[variant] = measure_variant(filled[variant], device, bandwidth)
            _write(report, out)
    if len(filled) == 2:
        report["fp16_greedy_agreement_random_weights"] = fp16_agreement(filled["fp32"], filled["fp16"], device)
    _write(report, out)
    return report


def _write(report: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_results.json").write_text(json.dumps(report, indent=2), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("skeleton", "check"))
    parser.add_argument("--models", type=Path, default=ROOT / ".gpu" / "models")
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-gpu-out"))
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = parser.parse_args(argv)
    if args.action == "skeleton":
        make_skeletons(args.models)
        return 0
    print(json.dumps(check(args.models, args.out, args.device), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
