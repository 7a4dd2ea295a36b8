"""`python main.py run`: decode one prompt under several strategies side by side in the terminal.

    python main.py run --prompt "The capital of France is" --max-new-tokens 8
    python main.py run --prompt "Once upon a time" --lane greedy --lane beam:num_beams=4 \\
        --lane sample:top_p=0.9,temperature=0.8,seed=7 --json run.json
    python main.py run --prompt "Once upon a time" --lane sample:temperature=1.0,seed=11 --fanout 8

`--from RUN.json --node ID` continues a saved run's session tree from node ID (see `main.py tree RUN.json`):
the node is made again from the file's specs (checked token by token), then the lanes (default: the node's own)
generate --max-new-tokens more tokens after it; `--json` writes the run with the file's tree and the new lanes
under the node (the file read is never changed unless it is also the --json path, and then only whole).

`--fanout K` runs every sampled lane as K members with seeds seed, seed+1, ... (decoding.analysis.fanout); the terminal
then shows each fan-out as its distinct continuations instead of K columns.

Bad input (unknown lane key, out-of-range value, empty prompt, unreadable file, missing model) prints one
line and exits with code 2 before anything is computed or written.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from cli import terminal_text
from cli.common import UsageError, check_writable, fail, load_model, load_model_text, one_line
from cli.replay_command import recorded_model
from decoding.analysis import session_tree
from decoding.analysis.fanout import MAX_FANOUT, fan_out_sampled
from decoding.chain.parameters import lane_help
from decoding.chain.spec import LaneSpec, assign_seeds, unique_names
from decoding.engine.engine import check_positions
from decoding.records.partial import mean_raw_entropy_bounds, partial_note, served_of
from decoding.records.stats import MIN_TOP_N
from decoding.records.trace import CriticalSettings, PromptInfo, RunTrace
from models.model_text import ModelText
from models.open_model import LaneModels
from runfiles import run_file
from runfiles.generation_config import lane_from_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prompt", default=None, help="the prompt text (required unless --from)")
    parser.add_argument("--from", dest="from_file", type=Path, default=None, metavar="RUN.json",
                        help="continue a saved run from a node of its session tree (with --node)")
    parser.add_argument("--node", type=int, default=None, metavar="ID",
                        help="the node of --from's session tree to continue (ids: `main.py tree RUN.json`)")
    parser.add_argument("--chat", action="store_true", help="wrap the prompt in the model's chat template")
    parser.add_argument("--system", default=None, help="system prompt (with --chat)")
    parser.add_argument(
        "--lane",
        action="append",
        default=[],
        metavar="SPEC",
        help="a lane: greedy | beam:num_beams=4,length_penalty=1.0 | "
        "sample:top_p=0.9,temperature=0.8,seed=7 | config:generation_config.json | a preset "
        "name (repeatable; default: greedy; the parameters a lane may set are listed below; model=NAME runs the "
        "lane on another prepared model, e.g. greedy:model=SmolLM2-135M-Instruct-int4; one of another tokenizer "
        "reads the prompt with its own and is compared with the others by text; model=llamacpp+http://HOST:PORT "
        "(or vllm+..., sglang+...; options ?alternatives=N|all&timeout=S&parallel=K&key_env=VAR) runs it on a "
        "served model: docs/served.md)",
    )
    parser.formatter_class = argparse.RawDescriptionHelpFormatter  # keeps the parameter list's lines
    parser.epilog = (
        "lane parameters (key=value in a lane spec, Hugging Face GenerationConfig names; a list as a|b, e.g.\n"
        "stop_strings=END|### or processor_order=top_k|temperature; in stop_strings \\n is a newline, \\t a tab,\n"
        "\\| a | and \\\\ a backslash, as in the window's lane editor):\n" + lane_help()
    )
    parser.add_argument(
        "--max-new-tokens", type=int, default=32, help="tokens to generate per lane (default 32)"
    )
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the whole run as JSON")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="base seed for sampled lanes that set none (each lane's seed derives from it and its name)",
    )
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument(
        "--model", default=None, help="prepared model name or folder (default: the default model), or a served "
        "model, e.g. llamacpp+http://127.0.0.1:8080: every lane then runs on the server (docs/served.md)"
    )
    parser.add_argument(
        "--top-n", type=int, default=MIN_TOP_N, help=f"top-N recorded per step (>= {MIN_TOP_N})"
    )
    parser.add_argument(
        "--near-tie",
        type=float,
        default=0.05,
        help="near-tie threshold on the top-1 − top-2 probability margin (default 0.05)",
    )
    parser.add_argument(
        "--fanout",
        type=int,
        default=None,
        metavar="K",
        help=f"run every sampled lane as K members with seeds seed, seed+1, ... (1..{MAX_FANOUT})",
    )
    critical = CriticalSettings()
    parser.add_argument(
        "--critical-draw-distance",
        type=float,
        default=critical.draw_distance,
        help="critical point of a sampled step: the draw within this distance of the edge to a strong "
        f"neighbour (default {critical.draw_distance})",
    )
    parser.add_argument(
        "--critical-ratio",
        type=float,
        default=critical.ratio,
        help=f"critical point of a greedy or beam step: p2 / p1 at least this (default {critical.ratio})",
    )
    parser.add_argument(
        "--critical-min-prob",
        type=float,
        default=critical.min_prob,
        help=f"a strong candidate's least probability (default {critical.min_prob})",
    )


def run(args: argparse.Namespace) -> int:
    if args.from_file is not None or args.node is not None:
        return continue_run(args)
    try:
        specs = lane_specs(args)
        check_arguments(args)
        critical = critical_settings(args)
        text = load_model_text(args.model)
        prompt = checked_prompt(args, specs, text)
        model = load_model(args.model, args.device, text)
        cancel = threading.Event()
        bar = StepProgress(args.max_new_tokens, len(specs))
        engine = model.engine(top_n=args.top_n, near_tie_threshold=args.near_tie, critical=critical,
                              models=LaneModels(model, args.device))
        run_ = engine.start(
            prompt,
            specs,
            max_new_tokens=args.max_new_tokens,
            model=model.info,
            provider=model.provider,
            base_seed=args.seed,
            cancel=cancel,
            on_prefill=bar.prefill,
        )
    except (UsageError, ValueError) as exc:
        return fail(str(exc))
    trace = generate(run_, cancel, bar)
    trace.tree = session_tree.tree_of_lanes(trace)
    return report(args, trace, model.tokenizer)


def report(args: argparse.Namespace, trace: RunTrace, tokenizer) -> int:
    """Print the run, write its JSON when asked; exit code 1 when the model stopped it early."""
    width = shutil.get_terminal_size((120, 24)).columns
    if args.fanout is None:
        print(terminal_text.render(trace, tokenizer, width))
        print(summary(trace))
    else:
        print(terminal_text.render_fanout_run(trace, tokenizer, width))
        print(fanout_summary(trace))
    if args.json is not None:
        run_file.save(trace, args.json)
        print(f"wrote {args.json}", file=sys.stderr)
    if trace.error:
        print(f"branchpoint: the run stopped early: {one_line(trace.error)}", file=sys.stderr)
        return 1
    return 0


def continue_run(args: argparse.Namespace) -> int:
    """`--from RUN.json --node ID`: the saved run continued from the node
    (decoding.analysis.session_tree.continue_from)."""
    try:
        if args.from_file is None or args.node is None:
            raise UsageError("--from and --node go together: --from RUN.json --node ID")
        if args.prompt is not None or args.fanout is not None:
            raise UsageError("--from continues the file's prompt: leave out --prompt and --fanout")
        if args.max_new_tokens < 1:
            raise UsageError(f"invalid --max-new-tokens={args.max_new_tokens}: allowed an integer >= 1")
        if args.json is not None:
            check_writable(args.json)
        saved = run_file.load(args.from_file)
        session_tree.node_of(saved.tree, args.node)
        specs = lane_specs(args) if args.lane else None
        model = load_model(args.model or recorded_model(saved), args.device)
        engine = model.engine(top_n=saved.settings.top_n, near_tie_threshold=saved.settings.near_tie_threshold,
                              critical=saved.settings.critical, models=LaneModels(model, args.device))
        trace = session_tree.continue_from(engine, saved, args.node, model.info.name, specs, args.max_new_tokens,
                                           provider=model.provider)
    except KeyError as exc:
        return fail(f"{args.from_file}: {exc.args[0]} (ids: `main.py tree {args.from_file}`)")
    except (UsageError, ValueError) as exc:
        return fail(str(exc))
    except RuntimeError as exc:
        print(f"branchpoint: the run stopped: {one_line(str(exc))}", file=sys.stderr)
        return 1
    return report(args, trace, model.tokenizer)


def checked_prompt(args: argparse.Namespace, specs: list[LaneSpec], text: ModelText) -> PromptInfo:
    """The prompt encoded with the model's tokenizer alone and checked against its positions: a prompt that
    cannot run is refused before the model is opened."""
    prompt = text.encode_prompt(args.prompt, chat=args.chat, system=args.system)
    longest = max(spec.max_new_tokens or args.max_new_tokens for spec in specs)
    check_positions(len(prompt.ids), longest, text.max_positions)
    return prompt


def lane_specs(args: argparse.Namespace) -> list[LaneSpec]:
    specs = assign_seeds(unique_names([lane_from_text(text) for text in (args.lane or ["greedy"])]), args.seed)
    if args.fanout is None:
        return specs
    try:
        return fan_out_sampled(specs, args.fanout)
    except ValueError as error:
        raise UsageError(f"invalid --fanout={args.fanout}: {_reason(error)}") from error


def _reason(error: ValueError) -> str:
    """The allowed part of a fan-out refusal ("invalid fanout=...: <reason>")."""
    return str(error).partition(": ")[2] or str(error)


def critical_settings(args: argparse.Namespace) -> CriticalSettings:
    values = {
        "draw_distance": args.critical_draw_distance,
        "ratio": args.critical_ratio,
        "min_prob": args.critical_min_prob,
    }
    for key, value in values.items():
        try:
            CriticalSettings(**{key: value})
        except ValueError as error:
            flag = "--critical-" + key.replace("_", "-")
            raise UsageError(f"invalid {flag}={value}: {_reason(error)}") from error
    return CriticalSettings(**values)


def check_arguments(args: argparse.Namespace) -> None:
    if args.prompt is None:
        raise UsageError("the following argument is required: --prompt (or --from RUN.json --node ID)")
    if not args.prompt.strip():
        raise UsageError("invalid --prompt: it is empty (allowed: non-empty text)")
    if args.max_new_tokens < 1:
        raise UsageError(f"invalid --max-new-tokens={args.max_new_tokens}: allowed an integer >= 1")
    if args.top_n < MIN_TOP_N:
        raise UsageError(f"invalid --top-n={args.top_n}: allowed an integer >= {MIN_TOP_N}")
    if not 0.0 <= args.near_tie <= 1.0:
        raise UsageError(f"invalid --near-tie={args.near_tie}: allowed a float in [0, 1]")
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"invalid --seed={args.seed}: allowed an integer >= 0")
    if args.system is not None and not args.chat:
        raise UsageError("--system needs --chat (the system prompt goes through the chat template)")
    if args.json is not None:
        check_writable(args.json)


def generate(run, cancel: threading.Event, bar: StepProgress) -> RunTrace:
    """Iterate a run with a progress bar on stderr; Ctrl-C cancels at the next step, or while the prompt is
    read after the chunk being read (the trace stays consistent, finish_reason "cancelled")."""
    previous = signal.signal(signal.SIGINT, lambda *_: (cancel.set(), run.cancel()))  # run.cancel: a server's too
    done = threading.Event()
    served = run.waiting_sources()  # a run or lanes on a server
    if served and bar.live:
        threading.Thread(target=_show_requests_in_flight, args=(served, bar, done), daemon=True).start()
    try:
        for lane_index, record in run:
            bar.update(lane_index, record.step)
    finally:
        done.set()
        signal.signal(signal.SIGINT, previous)
        bar.close()
    return run.trace


def _show_requests_in_flight(sources: list, bar: StepProgress, done: threading.Event) -> None:
    """A slow server: after a second without a new step, the progress line says how many requests wait."""
    while not done.wait(0.5):
        waiting = sum(source.in_flight for source in sources)
        if waiting and time.perf_counter() - bar.last_draw > 1.0:
            sys.stderr.write(f"\r… step {bar.step}: waiting on {waiting} request{'s' if waiting != 1 else ''} to "
                             f"{', '.join(sorted({s.address.url for s in sources}))} (Ctrl-C stops) ")
            sys.stderr.flush()


class StepProgress:
    """One stderr line: while the prompt is read, how much of it; then the furthest step any lane reached,
    tokens per second."""

    def __init__(self, total: int, lanes: int, width: int = 30) -> None:
        self.total, self.lanes, self.width = total, lanes, width
        self.started = time.perf_counter()
        self.records = 0
        self.step = 0
        self.last_draw = 0.0
        self.live = sys.stderr.isatty()  # redraw in place on a terminal; a log gets the final line only

    def prefill(self, done: int, total: int) -> None:
        """The engine's on_prefill: "reading the prompt: 1,536 / 4,000 tokens" (the rate counts from its end)."""
        self.started = time.perf_counter()
        if self.live and done < total:
            filled = int(self.width * done / total)
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] reading the prompt: "
                             f"{done:,} / {total:,} tokens ")
            sys.stderr.flush()

    def update(self, lane_index: int, step: int) -> None:
        self.records += 1
        advanced = step + 1 > self.step
        self.step = max(self.step, step + 1)
        now = time.perf_counter()
        if self.live and advanced and now - self.last_draw >= 0.1:
            self.last_draw = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        filled = int(self.width * self.step / self.total)
        rate = self.records / max(now - self.started, 1e-9)
        sys.stderr.write(
            f"\r[{'#' * filled}{'.' * (self.width - filled)}] step {self.step}/{self.total} "
            f"· {self.lanes} lane{'s' if self.lanes != 1 else ''} · {rate:.1f} tok/s "
        )
        sys.stderr.flush()

    def close(self) -> None:
        self._draw(time.perf_counter())
        sys.stderr.write("\n")
        sys.stderr.flush()


def summary(trace: RunTrace) -> str:
    timing = trace.timing
    lines = [
        terminal_text.legend(),
        f"{run_title(trace)} · {trace.provider} · prefill {timing.prefill_ms:.0f} ms · "
        f"{timing.steps} batched steps · {timing.tokens_per_s:.1f} tok/s",
    ]
    analysis = trace.analysis
    for lane in trace.lanes:
        ties = len(analysis.near_ties.get(lane.name, [])) if analysis else 0
        seed = f" (seed {lane.config['seed']})" if "seed" in lane.config else ""
        lines.append(
            f"  {lane.name}{seed}: {lane.finish_reason}, {len(lane.token_ids)} tokens, {ties} near-ties"
            + served_line(lane, trace.model.served)
        )
    if analysis:
        first = trace.lanes[0].name
        splits = [f"{d.b}@{d.step}" for d in analysis.divergences if d.a == first and d.step is not None]
        if splits:
            lines.append(f"  first divergence from {first}: " + ", ".join(splits))
    return "\n".join(lines)


def run_title(trace: RunTrace) -> str:
    """The run's model: its name, and the model a server serves when the whole run is on one."""
    served = trace.model.served
    return f"{trace.model.name} ({served['model']})" if served else trace.model.name


def served_line(lane, run_served: dict | None = None) -> str:
    """A lane on a served model: where (unless the whole run is there: `run_served`, said once above), and for a
    partial one its marker and the raw entropy as bounds (a top-N's own entropy is not the model's); its error
    when it ended with one."""
    served = served_of(lane)
    text = ""
    if served is not None:
        if served != run_served:
            text = f" · on {served['protocol']} {served['url']} ({served['model']})"
        note, bounds = partial_note(lane), mean_raw_entropy_bounds(lane)
        if note:
            text += f" · partial: {note}"
        if bounds:
            text += f" · raw entropy {bounds[0]:.3f}–{bounds[1]:.3f} nats (mean bounds)"
    if lane.error:
        text += f"\n    {one_line(lane.error)}"
    return text


def fanout_summary(trace: RunTrace) -> str:
    """The summary of a fan-out run: one line per ordinary lane, one per fan-out (members counted together)."""
    timing = trace.timing
    analysis = trace.analysis
    lines = [
        terminal_text.fanout_legend(),
        f"{run_title(trace)} · {trace.provider} · prefill {timing.prefill_ms:.0f} ms · "
        f"{timing.steps} batched steps · {timing.tokens_per_s:.1f} tok/s",
    ]
    for lane in trace.lanes:
        if lane.fanout is None:
            seed = f" (seed {lane.config['seed']})" if "seed" in lane.config else ""
            points = len(analysis.critical_points.get(lane.name, [])) if analysis else 0
            lines.append(f"  {lane.name}{seed}: {lane.finish_reason}, {len(lane.token_ids)} tokens, "
                         f"{points} critical points")
    for group, found in (analysis.fanouts if analysis else {}).items():
        members = [trace.lane(name) for name in found.members]
        reasons = Counter(lane.finish_reason for lane in members)
        ended = ", ".join(f"{count} {reason}" for reason, count in reasons.items())
        points = sum(len(analysis.critical_points.get(name, [])) for name in found.members)
        tokens = sum(len(lane.token_ids) for lane in members)
        lines.append(f"  {group} × {len(members)}: {ended}, {tokens} tokens, {points} critical points")
    return "\n".join(lines)
