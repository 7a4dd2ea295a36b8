"""The knock-out item (issue 35): every position of a context knocked out (runtime.knockout) against one plain
prefill of the same tokens, side by side; and against recomputing each row's whole sequence (what a graph with a
full 4D mask and no reuse of the plain run's keys would do), to show what the reuse saves."""

from __future__ import annotations

import numpy as np

from bench.report import Row, SkipItem
from bench.timing import interleaved, medians, paired_ratio

ITEM = "knockout"


def measure_knockout(ctx) -> list[Row]:
    from runtime.knockout import Knockout

    ids = (ctx.prompt_ids + ctx.random_ids(ctx.sizes.knockout_context))[: ctx.sizes.knockout_context]
    n = len(ids)
    try:
        knockout = Knockout(ctx.decoder)
    except ValueError as error:  # a graph without the per-row mask (an unprepared export)
        raise SkipItem(str(error)) from None
    rows = [[j] for j in range(n - 1)]
    samples = interleaved(
        {
            "knockout": lambda: knockout.run(ids, rows, [1, 2]),
            "whole rows": lambda: _whole_rows(knockout, ids),
            "prefill": lambda: ctx.decoder.prefill(ids),
        },
        max(1, ctx.sizes.prefill_reps - 1),
    )
    times = medians(samples)
    return [
        Row(ITEM, f"knock-out of every position of a {n}-token context", times["knockout"], unit="s", goal="<= 15",
            note=f"{n - 1} rows, each recomputing the positions after the one it hides"),
        Row(ITEM, f"knock-out per position / one prefill of the {n} tokens",
            paired_ratio(samples, "knockout", "prefill") / (n - 1),
            note="batched rows reuse the plain run's keys up to the hidden position"),
        Row(ITEM, f"knock-out reusing the plain run / every row's whole sequence recomputed ({n} tokens)",
            paired_ratio(samples, "knockout", "whole rows"), goal="< 1",
            note="the same mask per row; the second recomputes positions before the hidden one too"),
        Row(ITEM, f"one prefill of {n} tokens", times["prefill"], unit="s"),
    ]


def _whole_rows(knockout, ids: list[int]) -> None:
    """Every row recomputes positions 0..T-1 under its mask (in calls of knockout.max_tokens positions)."""
    from runtime.knockout import causal_mask

    decoder, n = knockout.decoder, len(ids)
    base_kv, _ = knockout._plain(np.asarray(ids))
    per_call = max(1, knockout.max_tokens // n)
    tokens = np.asarray(ids, dtype=np.int64)
    for first in range(0, n - 1, per_call):
        hidden = list(range(first, min(first + per_call, n - 1)))
        mask = np.repeat(causal_mask(0, n, n)[None], len(hidden), axis=0)
        for row, j in enumerate(hidden):
            mask[row, j + 1 :, j] = False
        tensors = decoder.row_gather(base_kv, np.zeros(len(hidden), dtype=np.int64))
        decoder.run_masked(tensors, np.repeat(tokens[None], len(hidden), axis=0), 0, mask[:, None])
