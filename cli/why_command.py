"""`python main.py why`: why one lane chose A and not B at one step. Every earlier position's push on the gap
logit(A) − logit(B) (the knock-out: the position hidden from every later position, its key masked for all later
queries, positions unchanged), word groups and spans, and the gap split by layer, attention head and MLP (direct
logit attribution, the final norm's scale held at its value). Prints the strongest pushers both ways and writes
everything as JSON (decoding.analysis.why, format "branchpoint-why").

    python main.py why --prompt "Although it rained all day, we went out" --step 0 --json why.json
    python main.py why --prompt "Tell me a story" --chat --lane sample:temperature=0.8,seed=3 --step 5 \\
        --b " dragon" --span 2:5 --json why.json

Bad input (an empty prompt, a step beyond what the lane generated, b equal to a, a candidate that is not one token
of the vocabulary, a span outside the context) prints one line and exits with code 2; Ctrl-C stops the knock-out
between two model calls (exit code 1, nothing written).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from cli.common import UsageError, check_writable, fail, load_model, load_model_text
from decoding.analysis.why import KnockoutCancelled, WhyResult
from runfiles.generation_config import lane_from_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prompt", required=True, help="the prompt text")
    parser.add_argument("--chat", action="store_true", help="wrap the prompt in the model's chat template")
    parser.add_argument("--system", default=None, help="system prompt (with --chat)")
    parser.add_argument("--lane", default="greedy", help="the lane, as `run --lane` takes it (default: greedy)")
    parser.add_argument("--step", type=int, required=True, help="the step to explain (0 = the first generated token)")
    parser.add_argument("--a", default=None, metavar="TOKEN", help="candidate A: a token's text or #id (default: the "
                        "token the lane chose)")
    parser.add_argument("--b", default=None, metavar="TOKEN", help="candidate B (default: the runner-up)")
    parser.add_argument("--span", action="append", default=[], metavar="START:END",
                        help="also hide positions START..END-1 together (repeatable)")
    parser.add_argument("--top", type=int, default=5, help="pushers printed each way (default 5)")
    parser.add_argument("--model", default=None, help="prepared model name or folder (default: the default model)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--json", type=Path, required=True, metavar="FILE", help="write the result as JSON")


def run(args: argparse.Namespace) -> int:
    from models.why import token_from_text, why_step
    from runfiles import run_file

    try:
        check_arguments(args)
        spans = [parse_span(text) for text in args.span]
        spec = lane_from_text(args.lane)
        text = load_model_text(args.model)
        prompt = text.encode_prompt(args.prompt, chat=args.chat, system=args.system)
        model = load_model(args.model, args.device, text)
        vocab = model.decoder.vocab_size
        a = None if args.a is None else token_from_text(model.tokenizer, args.a, vocab, "--a")
        b = None if args.b is None else token_from_text(model.tokenizer, args.b, vocab, "--b")
        lane = generate_lane(model, prompt, spec, args.step)
        bar = RowProgress()
        with cancel_on_interrupt() as cancel:
            result = why_step(model, model.info.path, prompt.ids, lane, args.step, a, b, spans,
                              progress=lambda done, total: bar(done, total) or cancel.is_set())
        bar.close()
    except (UsageError, ValueError) as exc:
        return fail(str(exc))
    except KnockoutCancelled as exc:
        print(f"\nbranchpoint: {exc}; nothing written", file=sys.stderr)
        return 1
    run_file.save_why(result, args.json)
    print(summary(result, args.top))
    print(f"wrote {args.json}", file=sys.stderr)
    return 0


def check_arguments(args: argparse.Namespace) -> None:
    if not args.prompt.strip():
        raise UsageError("invalid --prompt: it is empty (allowed: non-empty text)")
    if args.step < 0:
        raise UsageError(f"invalid --step={args.step}: allowed an integer >= 0")
    if args.top < 1:
        raise UsageError(f"invalid --top={args.top}: allowed an integer >= 1")
    if args.system is not None and not args.chat:
        raise UsageError("--system needs --chat (the system prompt goes through the chat template)")
    check_writable(args.json)


def parse_span(text: str) -> tuple[int, int]:
    start, colon, end = text.partition(":")
    if not colon or not start.strip().isdigit() or not end.strip().isdigit():
        raise UsageError(f"invalid --span={text!r}: allowed START:END, two positions (e.g. 2:5)")
    return int(start), int(end)


def generate_lane(model, prompt, spec, step: int):
    """The lane run to its step `step` (step + 1 tokens); the trace's lane."""
    engine = model.engine()
    run_ = engine.start(prompt, [spec], max_new_tokens=step + 1, model=model.info, provider=model.provider)
    for _ in run_:
        pass
    lane = run_.trace.lanes[0]
    if step >= len(lane.steps):
        raise UsageError(f"invalid --step={step}: lane {lane.name!r} stopped after {len(lane.steps)} steps "
                         f"({lane.finish_reason}); allowed 0..{len(lane.steps) - 1}")
    return lane


class cancel_on_interrupt:  # noqa: N801 - a context manager read as a phrase
    """Ctrl-C sets the event (the knock-out stops before its next call) instead of raising."""

    def __enter__(self) -> threading.Event:
        self.event = threading.Event()
        self.previous = signal.signal(signal.SIGINT, lambda *_: self.event.set())
        return self.event

    def __exit__(self, *exc) -> None:
        signal.signal(signal.SIGINT, self.previous)


class RowProgress:
    """One stderr line: knock-out rows done of all."""

    def __call__(self, done: int, total: int) -> None:
        if sys.stderr.isatty():
            print(f"\rknock-out {done}/{total} positions", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if sys.stderr.isatty():
            print(file=sys.stderr)


def summary(result: WhyResult, top: int) -> str:
    lines = [
        f"{result.model} · {result.provider} · lane {result.lane} step {result.step} · {len(result.token_ids)} "
        f"context tokens · knock-out {result.seconds:.1f} s",
        f"A {result.a.text!r} p={result.prob_a:.3f} vs B {result.b.text!r} p={result.prob_b:.3f}: "
        f"logit(A) − logit(B) = {result.gap:+.3f}",
        "each position hidden from every later position (its key masked for later queries, positions unchanged):",
    ]
    for toward_a, name in ((True, "A"), (False, "B")):
        rows = result.pushers(toward_a, top)
        listed = ", ".join(f"{row.text!r}@{row.positions[0]} {row.push:+.3f}" for row in rows) or "none"
        lines.append(f"  pushed toward {name}: {listed}")
    words = result.pushers(True, 3, result.words) + result.pushers(False, 3, result.words)
    if words:
        lines.append("  words: " + ", ".join(f"{row.text!r} {row.push:+.3f}" for row in words))
    for row in result.spans:
        lines.append(f"  span {row.positions[0]}..{row.positions[-1]} {row.text!r}: {row.push:+.3f}")
    lines.append(depth_line(result))
    return "\n".join(lines)


def depth_line(result: WhyResult) -> str:
    depth = result.depth
    if depth is None:
        return f"depth split: none ({result.depth_note})"
    parts = [("embedding", depth.embedding)]
    parts += [(f"L{i} attention", v) for i, v in enumerate(depth.attention)]
    parts += [(f"L{i} MLP", v) for i, v in enumerate(depth.mlp)]
    strongest = sorted(parts, key=lambda part: -abs(part[1]))[:4]
    listed = ", ".join(f"{name} {value:+.2f}" for name, value in strongest)
    return (f"depth split (direct, final norm's scale held): {listed}; rest {depth.rest:+.1e} of the gap "
            f"{depth.gap:+.3f}")
