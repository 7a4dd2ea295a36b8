"""Refusals from decoding/ in the interface's language: what a parameter allows and the rules decoding/ states in
English, translated from their fields (a ParameterError: "invalid top_p=1.5: allowed a float in [0, 1]"). Qt-free and
in state/ because the commands' notices word them too; the lane editor's fields (gui.present.lane_fields) use them."""

from __future__ import annotations

import math
import re

from decoding.chain.parameters import Allowed, ParameterError
from gui.i18n import QT_TRANSLATE_NOOP, translate

# The rules decoding/ states in English rather than as a range or a list (decoding.chain.parameters
# Strategies.requirement and its list kinds, the rules between parameters of decoding.chain.parameters and
# decoding.chain.spec), for the catalogue: the window matches a rule against these templates ({field}: any text, kept
# as it is) and shows the matching template's translation; a rule none matches is shown as it is.
RULES = (
    QT_TRANSLATE_NOOP("allowed", "unset unless do_sample=true (it applies to sample: lanes only)"),
    QT_TRANSLATE_NOOP("allowed", "none on a beam lane (beams stop on eos and length)"),
    QT_TRANSLATE_NOOP("allowed", "false when num_beams > 1 (beam sampling is not supported)"),
    QT_TRANSLATE_NOOP("allowed", "a non-empty string"),
    QT_TRANSLATE_NOOP("allowed", "a list of token ids (integers >= 0)"),
    QT_TRANSLATE_NOOP("allowed", "a list of non-empty lists of token ids"),
    QT_TRANSLATE_NOOP("allowed", "a list of [non-empty list of token ids, finite float] pairs"),
    QT_TRANSLATE_NOOP("allowed", "its default ({default}) unless {stage} is set: it configures that processor"),
    QT_TRANSLATE_NOOP("allowed", "unset with mirostat={mirostat} (mirostat chooses its own truncation, as "
                      "llama.cpp's mirostat replaces its other samplers)"),
    QT_TRANSLATE_NOOP("allowed", "false with mirostat={mirostat} (both decide each step's truncation)"),
    QT_TRANSLATE_NOOP("allowed", "unset unless repetition_penalty, frequency_penalty or presence_penalty is set "
                      "(it is their window)"),
    QT_TRANSLATE_NOOP("allowed", "an order naming every active processor (missing {missing})"),
    QT_TRANSLATE_NOOP("allowed", "mirostat last (it draws the token, as in llama.cpp)"),
    QT_TRANSLATE_NOOP("allowed", "{presets}, or distinct names among {names}"),
)


def _rule_pattern(template: str) -> re.Pattern:
    pieces = re.split(r"\{(\w+)\}", template)  # text, field, text, field, ..., text
    return re.compile("".join(re.escape(piece) if i % 2 == 0 else f"(?P<{piece}>.+?)"
                              for i, piece in enumerate(pieces)))


_RULE_PATTERNS = tuple((template, _rule_pattern(template)) for template in RULES)


def rule_text(rule: str) -> str:
    """A rule from decoding/ in the interface's language: the template it matches, translated, with its fields."""
    for template, pattern in _RULE_PATTERNS:
        found = pattern.fullmatch(rule)
        if found:
            return translate("allowed", template).format(**found.groupdict())
    return rule


def allowed_text(allowed: Allowed) -> str:
    """What a parameter allows (decoding.chain.parameters.Allowed), in the interface's language."""
    numbers = allowed.range
    if allowed.kind == "integer" and numbers.high == math.inf:
        return translate("allowed", "an integer >= {low}").format(low=numbers.low_text)
    if allowed.kind == "integer":
        return translate("allowed", "an integer in [{low}, {high}]").format(low=numbers.low_text,
                                                                           high=numbers.high_text)
    if allowed.kind == "float" and numbers.low == -math.inf and numbers.high == math.inf:
        return translate("allowed", "a finite float")
    if allowed.kind == "float":
        left, right = numbers.brackets
        return translate("allowed", "a float in {left}{low}, {high}{right}").format(
            left=left, low=numbers.low_text, high=numbers.high_text, right=right)
    if allowed.kind == "bool":
        return translate("allowed", "true or false")
    if allowed.kind == "choice":
        shown = allowed.shown_choices
        return translate("allowed", "{first} or {last}").format(first=", ".join(shown[:-1]), last=shown[-1])
    if allowed.kind == "texts":
        return translate("allowed", "a list of non-empty strings")
    return rule_text(allowed.rule)


def error_text(error: Exception | str) -> str:
    """A refusal from decoding/ in the interface's language, worded from its fields (a ParameterError: "invalid
    top_p=1.5: allowed a float in [0, 1]"), anything else as it is."""
    if not isinstance(error, ParameterError):
        return str(error)
    return translate("allowed", "invalid {name}={value}: allowed {allowed}").format(
        name=error.parameter, value=repr(error.value), allowed=allowed_text(error.allowed))
