"""The runtime alone: IO binding (KV cache kept as OrtValues on the device) vs plain `session.run` with the KV
cache round-tripping through numpy, and one batched step vs the same rows stepped one by one, at a short and a
long context. Ratios of interleaved measurements.

    python -m bench.bench_runtime [--model NAME_OR_DIR] [--device auto|cpu|cuda] [--reps N] [--rows 5]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from bench.report import Report, Row, machine_facts, table
from bench.timing import interleaved, medians, paired_ratio

NEXT_TOKEN = 42


class BoundStepper:
    """`rows` rows stepped by OnnxDecoder.step (IO binding, KV stays on the device)."""

    def __init__(self, decoder, prompt_ids: list[int], rows: int):
        self.decoder = decoder
        state, _ = decoder.prefill(prompt_ids)
        self.state, _ = decoder.step(state, [0] * rows, [NEXT_TOKEN] * rows)
        self.rows, self.tokens = list(range(rows)), [NEXT_TOKEN] * rows

    def __call__(self) -> None:
        self.state, _ = self.decoder.step(self.state, self.rows, self.tokens)


class PlainStepper:
    """The same rows through plain `session.run`: numpy inputs, presents copied back to numpy every step."""

    def __init__(self, decoder, prompt_ids: list[int], rows: int):
        if decoder.io.in_place:  # plain runs feed the graph as exported (its Concat-grown cache)
            from runtime.decoder import OnnxDecoder

            decoder = OnnxDecoder(decoder.model_dir, decoder.device, in_place=False)
        start = BoundStepper(decoder, prompt_ids, rows)
        self.session, self.io = decoder.session, decoder.io
        self.past = [value.numpy().copy() for value in start.state.tensors]
        self.length = int(start.state.lengths[0])
        self.ids = np.full((rows, 1), NEXT_TOKEN, np.int64)

    def __call__(self) -> None:
        rows = self.ids.shape[0]
        feeds = {
            "input_ids": self.ids,
            "attention_mask": np.ones((rows, self.length + 1), np.int64),
            "position_ids": np.full((rows, 1), self.length, np.int64),
        }
        if not self.io.has_position_ids:
            del feeds["position_ids"]
        feeds.update(zip(self.io.past_names, self.past, strict=True))
        outputs = self.session.run(["logits", *self.io.present_names], feeds)
        self.past, self.length = outputs[1:], self.length + 1


class OneByOne:
    def __init__(self, decoder, prompt_ids: list[int], rows: int):
        self.steppers = [BoundStepper(decoder, prompt_ids, 1) for _ in range(rows)]

    def __call__(self) -> None:
        for stepper in self.steppers:
            stepper()


def measure_runtime(decoder, contexts: tuple[int, ...], rows: int, reps: int) -> list[Row]:
    """Rows of the report for each context length."""
    rng = np.random.default_rng(0)
    report: list[Row] = []
    for context in contexts:
        ids = rng.integers(3, decoder.vocab_size, size=context).tolist()
        candidates = {
            "bound_1": BoundStepper(decoder, ids, 1),
            "plain_1": PlainStepper(decoder, ids, 1),
            f"bound_{rows}": BoundStepper(decoder, ids, rows),
            f"plain_{rows}": PlainStepper(decoder, ids, rows),
            "one_by_one": OneByOne(decoder, ids, rows),
        }
        samples = interleaved(candidates, reps)
        ms = medians(samples)
        item = f"runtime ctx {context}"
        report += [
            Row(item, "plain run / IO binding, 1 row", paired_ratio(samples, "plain_1", "bound_1")),
            Row(
                item,
                f"plain run / IO binding, {rows} rows",
                paired_ratio(samples, f"plain_{rows}", f"bound_{rows}"),
            ),
            Row(
                item,
                f"batched step ({rows} rows) / 1-row step",
                paired_ratio(samples, f"bound_{rows}", "bound_1"),
            ),
            Row(
                item,
                f"{rows} one-by-one steps / batched step",
                paired_ratio(samples, "one_by_one", f"bound_{rows}"),
            ),
            Row(item, "1-row step (IO binding)", ms["bound_1"] * 1e3, unit="ms"),
            Row(item, f"{rows}-row step (IO binding)", ms[f"bound_{rows}"] * 1e3, unit="ms"),
        ]
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_runtime", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="prepared model name or folder (default: the default model)")
    parser.add_argument("--device", default="cpu", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--reps", type=int, default=10, help="interleaved repetitions per candidate")
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--contexts", default="50,500", help="comma-separated prompt lengths")
    args = parser.parse_args(argv)

    from models.catalog import resolve
    from runtime.decoder import OnnxDecoder

    model_dir = resolve(args.model)
    decoder = OnnxDecoder(model_dir, device=args.device)
    decoder.warmup()
    contexts = tuple(int(c) for c in args.contexts.split(","))
    report = Report(machine=machine_facts(), settings={**vars(args), "provider": decoder.provider})
    report.add(measure_runtime(decoder, contexts, args.rows, args.reps))
    print(f"{model_dir.name} on {decoder.provider}")
    print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
