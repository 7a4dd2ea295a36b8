"""A lane's processor chain as the lane editor shows it, Qt-free: the processors it applies in their order, the
order it follows (a preset of decoding.chain.parameters.ORDER_PRESETS or one of its own) and the `processor_order` a
reordered chain becomes.

>>> from decoding.chain.spec import LaneSpec
>>> from gui.present.chain import moved, order_choice, reordered
>>> lane = LaneSpec("x", do_sample=True, temperature=1.5, top_k=40)
>>> lane.processors(), order_choice(lane)
(['temperature', 'top_k'], 'transformers')
>>> order = reordered(lane, moved(lane.processors(), 0, 1))
>>> LaneSpec("x", do_sample=True, temperature=1.5, top_k=40, processor_order=order).processors()
['top_k', 'temperature']
"""

from __future__ import annotations

from collections.abc import Sequence

from decoding.chain.parameters import ORDER_PRESETS, PROCESSOR_ORDER, order_preset
from decoding.chain.spec import LaneSpec
from gui.i18n import QT_TRANSLATE_NOOP, translate

# The names of the order presets and of an order of the lane's own (None), shown through order_name.
ORDER_NAMES = {
    "transformers": QT_TRANSLATE_NOOP("chain", "transformers order"),
    "llama.cpp": QT_TRANSLATE_NOOP("chain", "llama.cpp order"),
    None: QT_TRANSLATE_NOOP("chain", "custom order"),
}
CHOICES: tuple[str | None, ...] = tuple(ORDER_NAMES)


def order_name(choice: str | None) -> str:
    return translate("chain", ORDER_NAMES[choice])


def order_choice(spec: LaneSpec) -> str | None:
    """The order a lane follows: the preset its processor_order is (None: transformers'), else the preset that
    orders its chain alike, else None (an order of its own)."""
    if spec.processor_order is None:
        return "transformers"
    preset = next((name for name, order in ORDER_PRESETS.items() if tuple(spec.processor_order) == order), None)
    return preset or order_preset(spec.to_config(), spec.processor_order)


def preset_order(choice: str) -> tuple[str, ...] | None:
    """The processor_order a preset stands for in a LaneSpec (None: transformers', the default)."""
    return None if choice == "transformers" else ORDER_PRESETS[choice]


def full_order(order: Sequence[str] | None) -> list[str]:
    """Every processor in `order` (None: transformers'), those it leaves out after the others (an order from a
    file may name only its active ones), mirostat last: an order in which the user may turn any processor on."""
    names = list(order or PROCESSOR_ORDER)
    names += [name for name in PROCESSOR_ORDER if name not in names]
    return [name for name in names if name != "mirostat"] + ["mirostat"]


def reordered(spec: LaneSpec, chain: Sequence[str]) -> tuple[str, ...] | None:
    """The processor_order that applies `chain` (the lane's active processors in a new order): the lane's full
    order with its active processors put in the slots they held, in their new order; None when that is
    transformers' order."""
    names = full_order(spec.processor_order)
    slots = [index for index, name in enumerate(names) if name in chain]
    for slot, name in zip(slots, chain, strict=True):
        names[slot] = name
    return None if tuple(names) == PROCESSOR_ORDER else tuple(names)


def moved(chain: Sequence[str], index: int, delta: int) -> list[str]:
    """`chain` with its entry at `index` moved by `delta` places (kept within the chain)."""
    names = list(chain)
    target = min(max(index + delta, 0), len(names) - 1)
    names.insert(target, names.pop(index))
    return names
