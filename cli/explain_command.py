"""`python main.py explain`: what the model does inside over one token sequence (the prompt, then an optional
continuation): the tokens, every layer's attention weights per head and the logit lens, written as JSON
(docs/json-format.md, "Explain files"); a short summary of the last token on stdout.

    python main.py explain --prompt "Although I was tired, I still went out, but" --json explain.json
    python main.py explain --prompt "Write a poem" --chat --continuation "Roses are" --json explain.json

The first explain on a model prepares its inspection model (models.inspection; progress on stderr). Bad input
(empty prompt, a sequence the model cannot take, an unwritable --json, a missing model or device) prints one
line and exits with code 2 before any model work.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cli.common import UsageError, check_writable, fail
from cli.prepare_command import StageProgress
from decoding.records.explain import ExplainResult, check_length, first_top1_row, most_attended
from runfiles import run_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prompt", required=True, help="the prompt text")
    parser.add_argument(
        "--continuation", default="", help="text after the prompt (e.g. what a lane generated), tokenized on its own"
    )
    parser.add_argument("--chat", action="store_true", help="wrap the prompt in the model's chat template")
    parser.add_argument("--system", default=None, help="system prompt (with --chat)")
    parser.add_argument("--model", default=None, help="prepared model name or folder (default: the default model)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--json", type=Path, required=True, metavar="FILE", help="write the explain result as JSON")


def run(args: argparse.Namespace) -> int:
    try:
        check_arguments(args)
        model_dir, token_ids, prompt_length = sequence(args)
        check_device(args.device)
    except (UsageError, ValueError) as exc:
        return fail(str(exc))
    if not prepare(model_dir):
        return 1
    from models.inspection import explain_sequence
    from runtime import DeviceError

    try:
        result = explain_sequence(model_dir, token_ids, prompt_length, device=args.device)
    except DeviceError as exc:
        return fail(str(exc))
    run_file.save_explain(result, args.json)
    print(summary(result))
    print(f"wrote {args.json}", file=sys.stderr)
    return 0


def check_arguments(args: argparse.Namespace) -> None:
    if not args.prompt.strip():
        raise UsageError("invalid --prompt: it is empty (allowed: non-empty text)")
    if args.system is not None and not args.chat:
        raise UsageError("--system needs --chat (the system prompt goes through the chat template)")
    check_writable(args.json)


def sequence(args: argparse.Namespace) -> tuple[Path, list[int], int]:
    """The model folder, the whole sequence's ids (prompt, then continuation) and the prompt's length."""
    from models.catalog import resolve
    from models.model_text import encode_prompt
    from runtime.model_files import max_positions_from, read_json
    from runtime.tokenizer import Tokenizer

    try:
        model_dir = resolve(args.model)
        tokenizer = Tokenizer.from_model_dir(model_dir)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    prompt = encode_prompt(tokenizer, args.prompt, args.chat, args.system)
    token_ids = prompt.ids + tokenizer.encode(args.continuation, add_special_tokens=False)
    check_length(len(token_ids), max_positions_from(read_json(model_dir / "config.json")))
    return model_dir, token_ids, len(prompt.ids)


def check_device(device: str) -> None:
    if device == "cuda":
        from runtime.session import cuda_unavailable_reason

        reason = cuda_unavailable_reason()
        if reason:
            raise UsageError(f"--device cuda is not usable: {reason}. Use --device cpu or auto.")


def prepare(model_dir: Path) -> bool:
    """Prepare the inspection model if needed, with a progress bar; False (message printed) if that failed."""
    from models.errors import PrepareCancelled, PrepareError
    from models.inspection import inspection_is_prepared, prepare_inspection

    if inspection_is_prepared(model_dir):
        return True
    print(f"preparing the inspection model of {model_dir.name} (once per model)", file=sys.stderr)
    progress = StageProgress()
    try:
        prepare_inspection(model_dir, progress=progress)
    except PrepareError as exc:
        progress.close()
        kept = "; nothing was left half-written" if isinstance(exc, PrepareCancelled) else ""
        print(f"branchpoint: {exc}{kept}", file=sys.stderr)
        return False
    progress.close()
    return True


def summary(result: ExplainResult) -> str:
    """Where the last token looks back to, and when the logit lens first holds the model's own choice."""
    last = len(result.tokens) - 1
    prompt, continuation = result.prompt_length, len(result.tokens) - result.prompt_length
    attended = " · ".join(f"{result.tokens[p].text!r}@{p} {w:.2f}" for p, w in most_attended(result, last))
    final = result.lens_top(result.layers, last)[0]
    row = first_top1_row(result, last)
    return "\n".join(
        [
            f"{result.model.name} · {result.provider} · {len(result.tokens)} tokens ({prompt} prompt + "
            f"{continuation} continuation) · {result.layers} layers x {result.heads} heads",
            f"the last token {result.tokens[last].text!r} attends most to (mean over heads and layers): {attended}",
            f"the model's next token {final.text!r} ({final.prob:.2f}) is first top-1 at logit lens row {row} of "
            f"{result.layers} (0 = embeddings)",
        ]
    )
