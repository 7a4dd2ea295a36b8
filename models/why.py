"""Why A and not B at one step of a lane, for both front ends: the knock-out of every earlier position (and of
word groups and the user's spans) through the run's own decoder, and the depth split through the decoding graph's
residual pieces (runtime.knockout, runtime.depth; the maths in decoding.analysis.why).

    result = why_step(model, model_dir, prompt_ids, lane, step, a=None, b=None, spans=(), progress=callback)

`model` is what the front end has open (an OpenModel or the window's model: .decoder, .tokenizer, .provider,
.info.name); the depth graph is opened once per model folder and kept (DEPTH_GRAPHS).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from decoding.analysis.why import (
    Candidate,
    WhyResult,
    check_candidates,
    check_span,
    group_text,
    knockable,
    pushes,
    word_groups,
)
from decoding.records.trace import LaneTrace, StepRecord

_DEPTH_GRAPHS: dict[tuple[str, str], Any] = {}


def step_context(prompt_ids: Sequence[int], lane: LaneTrace, step: int) -> tuple[list[int], StepRecord]:
    """The tokens step `step` of `lane` read (its prompt, then its tokens before the step) and its record."""
    if not lane.steps:
        raise ValueError(f"lane {lane.name!r} has no steps yet: run it first")
    if not 0 <= step < len(lane.steps):
        raise ValueError(f"step {step} is beyond lane {lane.name!r} (allowed 0..{len(lane.steps) - 1})")
    prompt = list(lane.prompt_ids) if lane.prompt_ids is not None else list(prompt_ids)
    return prompt + [int(t) for t in lane.token_ids[:step]], lane.steps[step]


def default_candidates(record: StepRecord, a: int | None, b: int | None) -> tuple[int, int]:
    """A: the chosen token unless given; B: the most likely raw candidate other than A unless given."""
    a = record.token_id if a is None else int(a)
    if b is None:
        b = next((entry.id for entry in record.top_raw if entry.id != a), None)
        if b is None:
            raise ValueError("the step records no runner-up: name b")
    return a, int(b)


def why_step(
    model: Any,
    model_dir: Path | None,
    prompt_ids: Sequence[int],
    lane: LaneTrace,
    step: int,
    a: int | None = None,
    b: int | None = None,
    spans: Sequence[Sequence[int]] = (),
    progress=None,
    depth: bool = True,
) -> WhyResult:
    """See the module docstring. ValueError for a step beyond the lane, b == a, ids outside the vocabulary, a
    bad span or a graph that cannot hide a position from later ones only; KnockoutCancelled when stopped."""
    from runtime.knockout import Knockout

    context, record = step_context(prompt_ids, lane, step)
    a, b = default_candidates(record, a, b)
    decoder, tokenizer = model.decoder, model.tokenizer
    check_candidates(a, b, decoder.vocab_size)
    texts = [tokenizer.piece(t) for t in context]
    pieces = [tokenizer.token_bytes(t) for t in context]
    positions = [[j] for j in range(len(context) - 1)]
    words = [group for group in knockable(word_groups(texts, pieces), len(context)) if len(group) > 1]
    span_groups = [check_span(span, len(context)) for span in spans]
    groups = positions + words + span_groups
    knockout = Knockout(decoder)
    rows = knockout.run(context, groups, [a, b], progress)
    found = pushes(groups, texts, rows.base_logits, rows.base_log_norm, rows.logits, rows.log_norm, rows.top_ids,
                   [group_text(group, pieces) if len(group) > 1 else texts[group[0]] for group in groups])
    probs = [math.exp(float(v) - rows.base_log_norm) for v in rows.base_logits]
    result = WhyResult(
        lane=lane.name, step=step, a=Candidate(a, tokenizer.piece(a)), b=Candidate(b, tokenizer.piece(b)),
        token_ids=context, texts=texts, prompt_length=len(context) - step,
        logit_a=float(rows.base_logits[0]), logit_b=float(rows.base_logits[1]), prob_a=probs[0], prob_b=probs[1],
        positions=found[: len(positions)], words=found[len(positions) : len(positions) + len(words)],
        spans=found[len(positions) + len(words) :],
        model=getattr(getattr(model, "info", None), "name", "") or "", provider=getattr(model, "provider", ""),
        seconds=rows.seconds, plain_seconds=rows.plain_seconds,
    )
    if depth:
        add_depth(result, model_dir, decoder)
    return result


def add_depth(result: WhyResult, model_dir: Path | None, decoder: Any) -> None:
    """The depth split of the result's gap, or the reason there is none (result.depth_note)."""
    if model_dir is None:
        result.depth_note = "the depth split needs the model's folder (a prepared model)"
        return
    try:
        graph = depth_graph(Path(model_dir), decoder.device)
    except (ValueError, OSError) as exc:
        result.depth_note = str(exc)
        return
    started = time.perf_counter()
    result.depth = graph.split(result.token_ids, result.a.token_id, result.b.token_id)
    result.seconds += time.perf_counter() - started


def depth_graph(model_dir: Path, device: str):
    """The depth graph of a model folder on `device`, opened once (ValueError when the graph has no such split)."""
    from runtime.depth import DepthGraph

    key = (str(model_dir.resolve()), device)
    if key not in _DEPTH_GRAPHS:
        _DEPTH_GRAPHS[key] = DepthGraph(model_dir, device)
    return _DEPTH_GRAPHS[key]


def token_from_text(tokenizer: Any, text: str, vocab_size: int, name: str) -> int:
    """A candidate given as a token's text (' but') or as #id ('#1234'); ValueError naming `name` and what it
    allows."""
    if text.startswith("#") and text[1:].isdigit():
        token = int(text[1:])
        if token >= vocab_size:
            raise ValueError(f"invalid {name}={text}: not in the vocabulary (allowed ids #0..#{vocab_size - 1})")
        return token
    ids = tokenizer.encode(text, add_special_tokens=False)
    if len(ids) != 1:
        pieces = " ".join(repr(tokenizer.piece(i)) for i in ids) or "nothing"
        raise ValueError(f"invalid {name}={text!r}: it is {len(ids)} tokens ({pieces}); allowed: one token of the "
                         "vocabulary, as its text (e.g. ' but') or #id")
    return ids[0]
