"""One greedy lane against llama.cpp on the same GGUF (issue 37): Branchpoint's greedy lane (the engine, each step's
full-vocabulary statistics recorded) on the default model in fp32 and in its GGUF variants, and llama.cpp's own
greedy decoding of the model's GGUF (llama-cpp-python in a process of its own, bench/llama_cpp_worker.py: every
step's whole logits row read and its argmax taken), measured interleaved in one run. A lane's time per token is
(a 64-token run − a 1-token run) / 63, `min_new_tokens` forcing all 64 (prefill and start-up cancel out), the
median of the rounds. The ggml lane is timed a second way too, as the app runs it: in a process of its own
(bench/lane_worker.py), like llama.cpp's, where its session is the only one (two sessions of one process step ~5 %
apart by the order they were made, the later one faster: bench/results.md, "Tried on the evening of 2026-12-07");
the goal is read on that row. Skipped, saying why, when llama.cpp's Python bindings are neither installed nor built by
scripts/llama_cpp.sh."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.context import BenchContext, load_decoder
from bench.report import Row, SkipItem
from bench.timing import SESSION_SETTLE
from bench.variant_items import variant_folders

ITEM = "llama.cpp"
LANE_VARIANTS = ("fp32", "q4_1", "gguf", "ggml")  # the fp32 model and the variants that run the GGUF's own blocks
GGUF_BLOCK_LANES = ("q4_1", "gguf", "ggml")  # the variants that run the GGUF's own blocks
WORKER = Path(__file__).with_name("llama_cpp_worker.py")
LLAMA_CPP_VERSION = "0.3.36"
LANE_WORKER = Path(__file__).with_name("lane_worker.py")
ALONE = "ggml, alone in its process"  # the lane timed as the app runs it (see the module docstring)


def bindings_path() -> Path | None:
    """Where the worker imports llama-cpp-python from: the package scripts/llama_cpp.sh built into the cache (what the
    tests' oracle uses too), else the installed one (None: nothing to add); SkipItem when neither is there."""
    import importlib.util

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    built = cache / "branchpoint" / "llama.cpp" / LLAMA_CPP_VERSION / "python"
    if (built.parent / ".built").is_file():
        return built
    if importlib.util.find_spec("llama_cpp") is None:
        raise SkipItem("llama-cpp-python is not installed and scripts/llama_cpp.sh has not built it")
    return None


class LineWorker:
    """A worker process that answers each JSON request line on its stdin with one JSON line on its stdout."""

    def __init__(self, command: list[str], stderr, env: dict | None = None):
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                        text=True, env=env)

    def _read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise self._ended(self.process.wait())
        return json.loads(line)

    def _ended(self, status: int) -> Exception:
        """The error for a worker that ended instead of answering."""
        return RuntimeError(f"the worker ended (exit status {status})")

    def _ask(self, request: dict) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(10)


class LlamaCpp(LineWorker):
    """The worker process: greedy(prompt, tokens) → (seconds, ids)."""

    def __init__(self, gguf: Path, threads: int, repack: bool = False):
        env = dict(os.environ)
        path = bindings_path()
        if path is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path), env.get("PYTHONPATH")]))
            env["LLAMA_CPP_LIB_PATH"] = str(path / "llama_cpp" / "lib")
        command = [sys.executable, str(WORKER), str(gguf), str(threads)] + ([] if repack else ["--no-repack"])
        super().__init__(command, subprocess.DEVNULL, env)
        answer = self._read()
        if "error" in answer:
            self.close()
            raise SkipItem(f"llama.cpp did not load {gguf.name}: {answer['error']}")
        self.vocab = answer["vocab"]

    def _ended(self, status: int) -> Exception:
        return SkipItem(f"llama.cpp's worker ended (exit status {status})")

    def greedy(self, prompt: list[int], tokens: int) -> tuple[float, list[int]]:
        answer = self._ask({"prompt": prompt, "tokens": tokens})
        return answer["seconds"], answer["ids"]

    def logits(self, ids: list[int]) -> np.ndarray:
        """float32 [len(ids), vocab]: llama.cpp's logits at every position of the sequence."""
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "logits.f32"
            rows = self._ask({"score": list(ids), "out": str(path)})["rows"]
            return np.fromfile(path, dtype=np.float32).reshape(rows, self.vocab)


def greedy_spec(tokens: int):
    from decoding.chain.spec import parse_lane

    return parse_lane(f"greedy:min_new_tokens={tokens}")


def timed_greedy(ctx: BenchContext, tokens: int, source=None) -> tuple[float, list[int]]:
    """The wall time of one engine run (the bench prompt, prefill included) of a greedy lane forced to `tokens`
    tokens (`min_new_tokens`) on `source` (the context's decoder by default), and the tokens it chose."""
    from bench.engine_items import run_engine

    spec = greedy_spec(tokens)
    start = time.perf_counter()
    trace = run_engine(ctx, [spec], tokens, source=source)
    seconds = time.perf_counter() - start
    return seconds, [step.token_id for step in trace.lanes[0].steps]


def paired_run(greedy: Callable[[int], tuple[float, list[int]]], tokens: int) -> Run:
    """A `tokens`-token run and a 1-token run of one greedy lane: prefill and set-up cancel out in their difference."""
    seconds, ids = greedy(tokens)
    return Run(seconds, greedy(1)[0], ids)


def measure_llama_cpp(ctx: BenchContext) -> list[Row]:
    gguf = model_gguf(ctx.model_dir)
    tokens = max(2, ctx.sizes.new_tokens)
    llama = LlamaCpp(gguf, ctx.threads or os.cpu_count() or 2)
    worker = None
    try:
        folders = variant_folders(ctx.model_dir, LANE_VARIANTS)
        decoders = {name: ctx.decoder if name == "fp32" else load_decoder(path, ctx.device, ctx.threads)
                    for name, path in folders.items()}
        prompt = list(ctx.prompt_ids)

        def lane(decoder) -> Callable[[], Run]:
            return lambda: paired_run(lambda n: timed_greedy(ctx, n, decoder), tokens)

        candidates = {name: lane(decoder) for name, decoder in decoders.items()}
        candidates["llama.cpp"] = lambda: paired_run(lambda n: llama.greedy(prompt, n), tokens)
        if "ggml" in folders:
            worker = LaneWorker(folders["ggml"], ctx.device, ctx.threads)
            candidates[ALONE] = lambda: paired_run(worker.greedy, tokens)
        runs = interleaved_runs(candidates, ctx.sizes.run_reps)
        boards = scoreboards(ctx, llama, folders)
    finally:
        llama.close()
        if worker is not None:
            worker.close()
    return rows(runs, tokens) + board_rows(boards)


class LaneWorker(LineWorker):
    """A greedy lane in a process of its own (bench/lane_worker.py): its decoder the only session there."""

    def __init__(self, folder: Path, device: str, threads: int | None):
        self.errors = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: warnings cannot fill and block it
        super().__init__([sys.executable, str(LANE_WORKER), str(folder), device, str(threads or 0)], self.errors)
        self._read()

    def _ended(self, status: int) -> Exception:
        self.errors.seek(0)
        return RuntimeError(f"the lane worker ended (exit status {status}): {self.errors.read()[-1000:]}")

    def greedy(self, tokens: int) -> tuple[float, list[int]]:
        answer = self._ask({"tokens": tokens})
        return answer["seconds"], answer["ids"]

    def close(self) -> None:
        super().close()
        self.errors.close()


def scoreboards(ctx: BenchContext, llama: LlamaCpp, folders: dict[str, Path]) -> dict[str, dict]:
    """llama-perplexity's scoreboard against fp32 over the text set (models.teacher_forced) of llama.cpp itself on
    the GGUF (every position's logits from the worker) and, from their manifests, of the GGUF variants: how much
    llama.cpp's own arithmetic moves the distributions, beside what each variant's does (--quick: the start of one
    text)."""
    from models.catalog import read_manifest
    from models.teacher_forced import compare_scorers, load_texts, tokenizer_encoder
    from runtime.sequence_logits import SequenceScorer

    texts = load_texts()
    if ctx.sizes.text_set_chars is not None:
        texts = [dict(texts[0], text=texts[0]["text"][:ctx.sizes.text_set_chars])]
    boards = {"llama.cpp": compare_scorers(SequenceScorer(ctx.model_dir, ctx.device), llama.logits,
                                           tokenizer_encoder(ctx.model_dir), texts)}
    for name, folder in folders.items():
        board = (read_manifest(folder).get("variant") or {}).get("teacher_forced")
        if board:
            boards[name] = board
    return boards


def board_rows(boards: dict[str, dict]) -> list[Row]:
    out = []
    for name, board in boards.items():
        where = f"{name}: teacher-forced over the text set ({board['positions']} positions) vs fp32"
        out += [Row(ITEM, f"{where}, mean KL", board["mean_kl"], unit="nats"),
                Row(ITEM, f"{name}: same top token as fp32", 100 * board["same_top"], unit="%")]
    return out


@dataclass
class Run:
    long: float  # seconds of the whole-length run
    short: float  # seconds of the 1-token run
    ids: list[int]  # the long run's greedy tokens


def interleaved_runs(candidates: dict[str, Callable[[], Run]], rounds: int) -> dict[str, list[Run]]:
    """Every candidate once per round after one warm-up round, the order rotated each round (bench.timing's way)."""
    names = list(candidates)
    for name in names:
        candidates[name]()
    runs: dict[str, list[Run]] = {name: [] for name in names}
    for index in range(max(1, rounds)):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            time.sleep(SESSION_SETTLE)
            runs[name].append(candidates[name]())
    return runs


def rows(runs: dict[str, list[Run]], tokens: int) -> list[Row]:
    ms = {name: 1e3 * statistics.median((r.long - r.short) / (tokens - 1) for r in values)
          for name, values in runs.items()}
    out = [Row(ITEM, f"{name}: greedy lane, time per token", value, unit="ms") for name, value in ms.items()]
    llama = ms["llama.cpp"]
    for name in [n for n in ms if n not in ("llama.cpp", ALONE)]:
        out.append(Row(ITEM, f"{name} lane / llama.cpp, per token", ms[name] / llama))
    blocks = [n for n in ms if n in GGUF_BLOCK_LANES]
    if blocks:
        fastest = min(blocks, key=ms.get)
        alone_too = ALONE in ms  # then the goal is read on the lane alone in its process, as llama.cpp runs
        out.append(Row(ITEM, f"fastest GGUF-blocks lane ({fastest}) / llama.cpp, per token", ms[fastest] / llama,
                       goal="" if alone_too else "<= 1"))
        if alone_too:
            out.append(Row(ITEM, f"{ALONE} / llama.cpp, per token", ms[ALONE] / llama, goal="<= 1"))
    reference = runs["llama.cpp"][-1].ids
    for name in [n for n in runs if n != "llama.cpp"]:
        mine = runs[name][-1].ids
        same = next((i for i, (a, b) in enumerate(zip(mine, reference, strict=False)) if a != b),
                    min(len(mine), len(reference)))
        out.append(Row(ITEM, f"{name}: greedy tokens as llama.cpp's before the first difference", same,
                       unit=f"of {tokens}"))
    return out


def model_gguf(model_dir: Path) -> Path:
    from models.catalog import read_manifest

    source = read_manifest(model_dir).get("source") or {}
    path = model_dir / (source.get("gguf") or "")
    if not source.get("gguf") or not path.is_file():
        raise SkipItem(f"{model_dir.name} keeps no GGUF in its folder: llama.cpp has nothing to run")
    return path
