"""Adaptive sampling, entropix-style: each step of an `adaptive` lane looks at the raw distribution's entropy H
and varentropy V (nats, nats squared; decoding.records.stats) and decides how to choose, by these thresholds:

- `argmax` when H < 0.1 and V < 0.1 (the model is sure): the processed distribution's most likely token, no
  draw;
- `widen` when H > 5.0 and V > 5.0 (unsure, and unsure how unsure): the lane's chain with its temperature (1.0
  when unset) times 1.5 and top_k 100, then a draw;
- `sample` otherwise: the lane's chain, then a draw.

The thresholds are entropix's (xjdr-alt/entropix, its "flowing" and "resampling in the mist" corners of the
entropy x varentropy plane); its other corners (inserting a clarifying token, branching) change the text
rather than the choice and are left out. The decision is recorded in each step (StepRecord.adaptive).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LOW_ENTROPY = 0.1
LOW_VARENTROPY = 0.1
HIGH_ENTROPY = 5.0
HIGH_VARENTROPY = 5.0
WIDEN_TEMPERATURE = 1.5  # times the lane's temperature
WIDEN_TOP_K = 100


def decision(entropy: float, varentropy: float) -> str:
    """"argmax", "widen" or "sample" for a raw distribution's entropy and varentropy.

    >>> from decoding.chain.adaptive import decision
    >>> decision(0.05, 0.02), decision(6.0, 7.5), decision(2.0, 6.0)
    ('argmax', 'widen', 'sample')
    """
    if entropy < LOW_ENTROPY and varentropy < LOW_VARENTROPY:
        return "argmax"
    if entropy > HIGH_ENTROPY and varentropy > HIGH_VARENTROPY:
        return "widen"
    return "sample"


def widened(config: Mapping[str, Any]) -> dict[str, Any]:
    """The lane's config (or its values) for a `widen` step: temperature x 1.5 and top_k 100.

    >>> from decoding.chain.adaptive import widened
    >>> widened({"do_sample": True, "temperature": 0.8, "top_p": 0.9})
    {'do_sample': True, 'temperature': 1.2000000000000002, 'top_p': 0.9, 'top_k': 100}
    """
    return {**config, "temperature": (config.get("temperature") or 1.0) * WIDEN_TEMPERATURE, "top_k": WIDEN_TOP_K}
