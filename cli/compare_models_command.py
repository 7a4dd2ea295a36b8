"""`python main.py compare-models`: where two models' next-token distributions part, token by token.

    python main.py compare-models --prompt "Once upon a time," \\
        --models SmolLM2-135M-Instruct,SmolLM2-135M-Instruct-int4 --json cmp.json

Model A (the reference) runs a lane (default greedy); model B then reads A's own tokens in one prefill of the
whole sequence, and so does A (logits at every position, the same graph for both). Per step: KL(A ‖ B), top-1
agreement and the change in p(the token A chose); a summary with mean and max KL, top-1 agreement, and the first
step where the two models' free-running greedy continuations part. The JSON is described in docs/json-format.md
("Model comparison files"). Models with different vocabularies are refused (a token-aligned comparison needs
one tokenizer). Bad input prints one line and exits with code 2.

    python main.py compare-models --text-set --models SmolLM2-135M-Instruct,SmolLM2-135M-Instruct-q8_0

With --text-set both models read the project's fixed English and Chinese texts (models/data/kl_texts.json)
instead of a lane, as `llama-perplexity --kl-divergence` does: mean and 99th-percentile KL, same top token,
RMS Δp of the text's next token and the top-10 Jaccard overlap, overall and per language (the numbers a variant's
manifest records).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path

from cli.common import UsageError, check_writable, fail, load_model, load_model_text
from decoding.analysis import model_compare
from decoding.chain.spec import assign_seeds, parse_lane, unique_names
from decoding.engine.engine import check_positions
from runfiles.atomic_write import write_text_atomic
from runfiles.generation_config import lane_from_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prompt", help="the prompt text (required unless --text-set)")
    parser.add_argument("--text-set", action="store_true",
                        help="teacher-forced over the fixed text set (models/data/kl_texts.json) instead of a lane")
    parser.add_argument("--models", required=True, metavar="A,B", help="two prepared models: reference,other")
    parser.add_argument("--lane", default="greedy", metavar="SPEC", help="model A's lane (as `run --lane`)")
    parser.add_argument("--max-new-tokens", type=int, default=32, help="tokens A generates (default 32)")
    parser.add_argument("--chat", action="store_true", help="wrap the prompt in the model's chat template")
    parser.add_argument("--system", default=None, help="system prompt (with --chat)")
    parser.add_argument("--seed", type=int, default=None, help="base seed for a sampled lane that sets none")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the comparison as JSON")


def model_names(text: str) -> tuple[str, str]:
    names = [n.strip() for n in text.split(",")]
    if len(names) != 2 or not all(names):
        raise UsageError(f"invalid --models={text!r}: allowed two prepared model names or folders, A,B")
    return names[0], names[1]


def check_same_vocabulary(a: str, b: str) -> None:
    """UsageError unless both models' tokenizers have the same vocabulary (ids and tokens)."""
    from models.catalog import resolve, tokenizer_vocabulary, vocabulary_size

    try:
        vocab_a, vocab_b = tokenizer_vocabulary(resolve(a)), tokenizer_vocabulary(resolve(b))
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    if vocab_a != vocab_b:
        raise UsageError(
            f"{a} and {b} have different vocabularies ({vocabulary_size(vocab_a)} vs "
            f"{vocabulary_size(vocab_b)} tokens): a token-aligned comparison needs the same tokenizer; "
            "compare their texts instead (`main.py run --model ...` for each)"
        )


def check_arguments(args: argparse.Namespace) -> None:
    if args.text_set:
        if args.prompt is not None:
            raise UsageError("--text-set reads the fixed text set: it takes no --prompt")
    elif args.prompt is None or not args.prompt.strip():
        raise UsageError("invalid --prompt: it is empty (allowed: non-empty text)")
    if args.max_new_tokens < 1:
        raise UsageError(f"invalid --max-new-tokens={args.max_new_tokens}: allowed an integer >= 1")
    if args.system is not None and not args.chat:
        raise UsageError("--system needs --chat (the system prompt goes through the chat template)")
    if args.json is not None:
        check_writable(args.json)


def run_lanes(model, prompt, specs, max_new_tokens: int, seed: int | None) -> dict[str, list[int]]:
    """Each lane's generated ids on `model`."""
    run = model.engine().start(
        prompt,
        specs,
        max_new_tokens=max_new_tokens,
        model=model.info,
        provider=model.provider,
        base_seed=seed,
        cancel=threading.Event(),
    )
    for _ in run:
        pass
    if run.trace.error:
        raise UsageError(f"the run on {model.info.name} stopped early: {run.trace.error}")
    return {lane.name: list(lane.token_ids) for lane in run.trace.lanes}


def identity(model, lane: str | None = None) -> dict:
    from models.catalog import read_manifest
    from models.variants import precision_of

    record = {
        "name": model.info.name,
        "precision": precision_of(read_manifest(model.info.path)),
        "hashes": dict(model.info.hashes),
        "provider": model.provider,
    }
    return record | ({"lane": lane} if lane is not None else {})


def compare_on_text_set(name_a: str, name_b: str, device: str) -> dict:
    """Both models over the fixed text set: the scoreboard and each model's identity."""
    from models.catalog import read_manifest, resolve
    from models.teacher_forced import compare_models
    from models.variants import precision_of

    board = compare_models(resolve(name_a), resolve(name_b), "cpu" if device == "auto" else device)
    side = {n: {"name": n, "precision": precision_of(read_manifest(resolve(n)))} for n in (name_a, name_b)}
    return {"format": "branchpoint-text-set-comparison", "version": 1, "reference": side[name_a],
            "other": side[name_b], "scoreboard": board}


def render_text_set(record: dict) -> str:
    board = record["scoreboard"]
    lines = [f"{record['reference']['name']} ({record['reference']['precision']}) → {record['other']['name']} "
             f"({record['other']['precision']}), teacher-forced over {board['texts']} (windows of {board['window']})",
             f"{'':<6}{'tokens':>7}  {'mean KL':>9}  {'p99 KL':>9}  {'same top':>8}  {'RMS Δp':>7}  top-10 Jaccard"]
    for label, row in [("all", board)] + sorted(board["by_language"].items()):
        lines.append(f"{label:<6}{row['positions']:>7}  {row['mean_kl']:9.3g}  {row['p99_kl']:9.3g}  "
                     f"{100 * row['same_top']:7.2f}%  {100 * row['rms_delta_p']:6.2f}%  {row['top10_jaccard']:.3f}")
    return "\n".join(lines)


def compare(args: argparse.Namespace) -> dict:
    from models.catalog import resolve
    from runtime.sequence_logits import SequenceScorer

    check_arguments(args)
    name_a, name_b = model_names(args.models)
    if args.text_set:
        load_model_text(name_a)
        load_model_text(name_b)
        check_same_vocabulary(name_a, name_b)
        return compare_on_text_set(name_a, name_b, args.device)
    text_a = load_model_text(name_a)
    load_model_text(name_b)
    check_same_vocabulary(name_a, name_b)
    try:
        lane = lane_from_text(args.lane)
    except ValueError as exc:
        raise UsageError(f"invalid --lane={args.lane!r}: {exc}") from exc
    greedy = parse_lane("greedy")
    specs = assign_seeds(unique_names([lane] if args.lane.strip() == "greedy" else [lane, greedy]), args.seed)
    prompt = text_a.encode_prompt(args.prompt, chat=args.chat, system=args.system)
    check_positions(len(prompt.ids), args.max_new_tokens, text_a.max_positions)

    model_a = load_model(name_a, args.device, text_a)
    lanes_a = run_lanes(model_a, prompt, specs, args.max_new_tokens, args.seed)
    reference = identity(model_a, args.lane)
    tokens = lanes_a[specs[0].name]
    greedy_a = lanes_a[specs[-1].name]
    del model_a
    model_b = load_model(name_b, args.device, text_a)
    greedy_b = run_lanes(model_b, prompt, [specs[-1]], args.max_new_tokens, None)[specs[-1].name]
    other = identity(model_b)
    del model_b

    sequence = list(prompt.ids) + tokens
    rows = slice(len(prompt.ids) - 1, len(sequence) - 1)
    logits = []
    for name in (name_a, name_b):
        scorer = SequenceScorer(resolve(name), args.device)
        logits.append(scorer(sequence)[rows])
        del scorer
    steps = model_compare.teacher_forced(logits[0], logits[1], tokens)
    tokenizer = text_a.tokenizer
    greedy_record = {
        "reference_ids": greedy_a,
        "other_ids": greedy_b,
        "reference_text": tokenizer.decode(greedy_a),
        "other_text": tokenizer.decode(greedy_b),
    }
    prompt_record = {"text": prompt.text, "ids": list(prompt.ids), "chat": prompt.chat}
    pieces = [tokenizer.piece(t) for t in tokens]
    return model_compare.comparison_record(prompt_record, reference, other, steps, pieces, greedy_record)


def render(record: dict) -> str:
    summary = record["summary"]
    a, b = record["reference"]["name"], record["other"]["name"]
    lines = [f"{a} ({record['reference']['precision']}) → {b} ({record['other']['precision']}), teacher-forced"]
    lines.append(f"{'step':>4}  {'token':<16} {'KL(A‖B)':>9}  {'pA':>6}  {'pB':>6}  top-1")
    for step in record["steps"]:
        mark = "same" if step["top1_agree"] else "FLIP"
        lines.append(
            f"{step['step']:>4}  {step['token']!r:<16.16} {step['kl']:9.2e}  {step['p_reference']:6.3f}  "
            f"{step['p_other']:6.3f}  {mark}"
        )
    divergence = summary["greedy_first_divergence_step"]
    lines.append(
        f"mean KL {summary['mean_kl']:.3g} · max KL {summary['max_kl']:.3g} (step {summary['max_kl_step']}) · "
        f"top-1 agreement {summary['top1_agreement']:.1%} · free-running greedy texts "
        + ("never part" if divergence is None else f"part at step {divergence}")
    )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        record = compare(args)
    except (UsageError, ValueError) as exc:
        return fail(str(exc))
    print(render_text_set(record) if args.text_set else render(record))
    if args.json is not None:
        write_text_atomic(args.json, json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0
