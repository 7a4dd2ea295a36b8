"""Branchpoint's benchmark suite: `python main.py bench` or `python -m bench`.

Prints a table of ratios measured side by side in one run (absolute times drift on a shared machine, ratios of
interleaved measurements much less) and writes the same rows as JSON (default bench/results.json)."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from bench.context import BenchContext, sizes_for
from bench.report import Report, Row, SkipItem, machine_facts, table, update_markdown, write_json

DEFAULT_OUT = Path(__file__).resolve().parent / "results.json"


# Item name -> "module:function" measuring it, in running order (imported lazily: each pulls heavy modules).
ITEMS = {  # the items first, then the measured proposals
    "side_by_side": "bench.engine_items:measure_side_by_side",
    "batching": "bench.decoder_items:measure_batching",
    "kv": "bench.decoder_items:measure_kv_flatness",
    "floor": "bench.decoder_items:measure_floor",
    "sampler": "bench.engine_items:measure_sampler_overhead",
    "llama_sampler": "bench.engine_items:measure_llama_sampler_overhead",
    "fanout": "bench.engine_items:measure_fanout",
    "fanout_sampler": "bench.engine_items:measure_fanout_sampler",
    "gui": "bench.gui_items:measure_gui",
    "long_prompts": "bench.long_prompt_items:measure_long_prompts",
    "explain": "bench.long_prompt_items:measure_explain",
    "knockout": "bench.why_items:measure_knockout",
    "precision": "bench.precision:measure_precision",
    "variants": "bench.variant_items:measure_variants",
    "llama_cpp": "bench.llama_cpp_items:measure_llama_cpp",
    "prefill_edit": "bench.decoder_items:measure_prefill_edit",
    "attention_edit": "bench.decoder_items:measure_attention_edit",
    "ort_options": "bench.ort_options:measure_ort_options",
    "busy": "bench.busy_items:measure_busy",
    "startup": "bench.startup_items:measure_startup",
    "served": "bench.served_items:measure_served",
    "gemma": "bench.gemma_items:measure_gemma",
}
ITEM_NAMES = tuple(ITEMS)


def _item_function(name: str) -> Callable[[BenchContext], list[Row]]:
    module, function = ITEMS[name].split(":")
    return getattr(importlib.import_module(module), function)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--items",
        default=",".join(ITEM_NAMES),
        help=f"comma-separated items to run (default: all of {', '.join(ITEM_NAMES)})",
    )
    parser.add_argument("--model", default=None, help="prepared model name or folder (default: the default model)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a fast smoke run")
    parser.add_argument("--new-tokens", type=int, default=None, help="tokens per lane for side_by_side / sampler")
    parser.add_argument("--reps", type=int, default=None, help="interleaved repetitions of whole runs (side_by_side)")
    parser.add_argument("--step-reps", type=int, default=None, help="timed steps per candidate (batching, kv, floor)")
    parser.add_argument("--threads", type=int, default=None, help="ONNX Runtime intra-op threads (default: ORT's)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON results file (default: {DEFAULT_OUT})")
    parser.add_argument(
        "--markdown",
        type=Path,
        default=None,
        help="also write machine facts and the table into this file's bench block",
    )


def run(args: argparse.Namespace) -> int:
    selected = [name.strip() for name in args.items.split(",") if name.strip()]
    unknown = [name for name in selected if name not in ITEM_NAMES]
    if unknown:
        print(f"bench: unknown item(s) {', '.join(unknown)}; allowed: {', '.join(ITEM_NAMES)}", file=sys.stderr)
        return 2
    try:
        context = _context(args)
    except FileNotFoundError as error:
        print(f"bench: {error}", file=sys.stderr)
        return 2
    report = Report(machine=machine_facts(), settings=_settings(args, context))
    failed = _run_items(context, selected, report, lambda: _save(report, args))
    print(table(report))
    print(f"\nwritten to {args.out}")
    return 1 if failed else 0


def _save(report: Report, args: argparse.Namespace) -> None:
    """Written after every item, so an interrupted run keeps what it measured."""
    write_json(report, args.out)
    if args.markdown is not None:
        update_markdown(report, args.markdown)


def _context(args: argparse.Namespace) -> BenchContext:
    from models.catalog import resolve

    sizes = sizes_for(args.quick, new_tokens=args.new_tokens, run_reps=args.reps, step_reps=args.step_reps)
    return BenchContext(model_dir=resolve(args.model), sizes=sizes, threads=args.threads)


def _settings(args: argparse.Namespace, context: BenchContext) -> dict:
    return {
        "model_dir": str(context.model_dir),
        "quick": args.quick,
        "threads": args.threads,
        "sizes": dataclasses.asdict(context.sizes),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def _run_items(context: BenchContext, selected: list[str], report: Report, save: Callable[[], None]) -> bool:
    """Runs each item (saving after each); an item that cannot run here is recorded as skipped, one that crashes
    as failed."""
    failed = False
    for name in selected:
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            report.add(_item_function(name)(context))
        except SkipItem as skip:
            report.skipped[name] = str(skip)
        except Exception as error:  # noqa: BLE001 - one broken item must not lose the others' numbers
            traceback.print_exc()
            report.skipped[name] = f"FAILED: {type(error).__name__}: {error}"
            failed = True
        print(f"bench: {name} done in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
        save()
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
