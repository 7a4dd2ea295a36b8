"""What the lane editor shows for each strategy parameter: widget kind, range, step, "off" value and tooltip,
all read from the parameter table (`decoding.chain.parameters`).

Qt-free so it can be tested on its own. Ranges are what the widgets allow; the real validation
(cross-parameter rules such as "sampling warpers need do_sample") stays in `decoding.chain.spec.LaneSpec`, whose
ValueError the editor shows as a visible message.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from decoding.chain.parameters import (
    LIST_KINDS,
    PARAMETERS,
    Parameter,
    Strategies,
    parameter,
)
from decoding.chain.spec import (
    LaneSpec,
    format_stop_strings,
    parse_id_list,
    parse_stop_strings,
    short_value,
)
from gui.i18n import QT_TRANSLATE_NOOP, translate
from gui.present.chain import order_choice, order_name
from gui.state.lane_names import model_label, value_text
from gui.state.refusals import allowed_text


@dataclass(frozen=True)
class Field:
    name: str  # Hugging Face GenerationConfig name (= LaneSpec attribute)
    kind: str  # "bool" | "int" | "float" | "choice" | "text" | "ids" | "id_lists" | "biases" (one line each)
    minimum: float = 0
    maximum: float = 0
    step: float = 1
    decimals: int = 0
    off: Any = None  # the value that means "not applied"; shown when the spec leaves the parameter unset
    choices: tuple[str, ...] = ()
    special_text: str = ""  # what a spin box shows at its minimum, when that minimum means "unset"
    applies_to: Strategies = Strategies.ALL

    @property
    def tooltip(self) -> str:
        """What the parameter does and allows, in the interface's language (read when shown: the translation
        is loaded after this module)."""
        return _tooltip(parameter(self.name))

    @property
    def needs_beams(self) -> bool:
        return self.applies_to is Strategies.BEAM


def _field(p: Parameter) -> Field:
    """The editor's widget for one row of the parameter table."""
    off = p.default if p.off is None else p.off  # a companion that turns its stage on has an off value too
    minimum = maximum = 0.0
    if p.range is not None:
        # An open end is reachable in the widget, so typing it (temperature 0) gets LaneSpec's refusal in words
        # instead of silently snapping to the nearest allowed value.
        minimum = -p.editor_max if p.range.low == -math.inf else p.range.low
        maximum = p.editor_max if p.range.high == math.inf else p.range.high
        if p.unset_label:  # one below the range stands for "unset"
            minimum = off = p.range.low - 1
    if p.kind in LIST_KINDS:
        off = format_list(p, p.default)
    return Field(
        name=p.name,
        kind=p.kind,
        minimum=minimum,
        maximum=maximum,
        step=p.step,
        decimals=p.decimals,
        off=str(off) if p.kind == "choice" else off,
        choices=tuple(str(choice) for choice in p.choices),
        special_text=p.unset_label,
        applies_to=p.applies_to,
    )


def _tooltip(p: Parameter) -> str:
    parts = [translate("parameters", p.meaning)]
    if p.is_processor:
        parts.append(translate("lane_fields", "{off} = off.").format(off=json.dumps(p.off)))
    if p.unset_label:
        parts.append(translate("lane_fields", "{unset} = unset.").format(unset=translate("lane_fields", p.unset_label)))
    if p.kind in LIST_KINDS:
        parts.append(translate("lane_fields", LIST_HINTS[p.kind]))
    follows = (translate("lane_fields", "Allowed: {allowed}. Follows transformers' {name}.") if p.follows ==
               "transformers" else translate("lane_fields", "Allowed: {allowed}. Follows {name}."))
    parts.append(follows.format(allowed=allowed_text(p.allowed_values()), name=p.hf_name))
    return " ".join(parts)


# How each list kind is typed on one line (as the command line takes it), for the tooltips.
LIST_HINTS = {
    "text": QT_TRANSLATE_NOOP("lane_fields", "Separate several with |; write a newline as \\n. Empty = none."),
    "ids": QT_TRANSLATE_NOOP("lane_fields", "Token ids separated by |, e.g. 28|30. Empty = none."),
    "id_lists": QT_TRANSLATE_NOOP("lane_fields", "Sequences separated by |, the ids of one by spaces, e.g. 5 6|7. "
                                  "Empty = none."),
    "biases": QT_TRANSLATE_NOOP("lane_fields", "Each sequence, a colon and its bias, separated by |, e.g. "
                                "5 6:-2.5|7:1. Empty = none."),
}


def format_list(p: Parameter, value: Any) -> str:
    """A list-valued parameter as the editor's one line shows it (read back by parse_list)."""
    return format_stop_strings(value) if p.kind == "text" else short_value(tuple(value))


def parse_list(p: Parameter, line: str) -> tuple:
    """The editor's one line as a list-valued parameter; a ParameterError when it does not parse."""
    return parse_stop_strings(line) if p.kind == "text" else parse_id_list(p, line)


# The parameters' meanings (decoding.chain.parameters) for the catalogue, as the lane editor's tooltips show them
# (tests/gui/test_i18n.py checks every meaning is here, so an edited meaning is not left untranslated).
MEANINGS = (
    QT_TRANSLATE_NOOP("parameters", "Draw the next token at random from the processed distribution (seeded, so runs "
                      "repeat) instead of taking the most likely one; the sampling parameters apply "
                      "only when it is on."),
    QT_TRANSLATE_NOOP("parameters", "Beam search: keep this many partial sequences and extend the best-scoring ones "
                      "(1 = no beam search; not with do_sample)."),
    QT_TRANSLATE_NOOP("parameters", "Divide the logits by this before the softmax: below 1 sharpens the distribution,"
                      " above 1 flattens it."),
    QT_TRANSLATE_NOOP("parameters", "Keep only the k most likely tokens (all tokens tied with the k-th too)."),
    QT_TRANSLATE_NOOP("parameters", "Nucleus sampling: keep the smallest set of most likely tokens whose "
                      "probabilities add up to at least top_p."),
    QT_TRANSLATE_NOOP("parameters", "Drop the tokens whose probability is below min_p times the top token's "
                      "probability."),
    QT_TRANSLATE_NOOP("parameters", "Locally typical sampling: keep the tokens whose surprisal is closest to the "
                      "entropy until their probabilities add up to typical_p."),
    QT_TRANSLATE_NOOP("parameters", "Make the tokens already in the prompt or the output less likely: positive logits"
                      " are divided by it, negative ones multiplied."),
    QT_TRANSLATE_NOOP("parameters", "Forbid any n-gram of this size from appearing twice (prompt included)."),
    QT_TRANSLATE_NOOP("parameters", "Suppress the end-of-sequence tokens until this many tokens are generated."),
    QT_TRANSLATE_NOOP("parameters", "Truncation sampling: drop the tokens whose probability is below epsilon_cutoff."),
    QT_TRANSLATE_NOOP("parameters", "Eta sampling: drop the tokens whose probability is below min(eta_cutoff, "
                      "sqrt(eta_cutoff) * exp(-entropy))."),
    QT_TRANSLATE_NOOP("parameters", "Never produce these token ids (their scores become -inf)."),
    QT_TRANSLATE_NOOP("parameters", "Forbid these token sequences: the last token of each is banned where the tokens "
                      "before it were just produced (a single id is always banned; an eos id alone is not)."),
    QT_TRANSLATE_NOOP("parameters", "Add a bias to the score of the last token of each sequence where the tokens "
                      "before it were just produced (a single id: always)."),
    QT_TRANSLATE_NOOP("parameters", "Subtract frequency_penalty times the number of times a token occurs in the "
                      "penalty window (plus presence_penalty once if it occurs) from its logit."),
    QT_TRANSLATE_NOOP("parameters", "Subtract this from the logit of every token that occurs in the penalty window "
                      "(with frequency_penalty, in one llama.cpp penalties stage)."),
    QT_TRANSLATE_NOOP("parameters", "The penalty window: the last penalty_last_n ids of prompt and output that "
                      "repetition_penalty, frequency_penalty and presence_penalty look at (unset: all of them)."),
    QT_TRANSLATE_NOOP("parameters", "DRY (don't repeat yourself): penalise a token that would extend a sequence "
                      "already in the text by dry_multiplier * dry_base^(length - dry_allowed_length)."),
    QT_TRANSLATE_NOOP("parameters", "DRY: the base of the penalty's exponential growth with the repeated length."),
    QT_TRANSLATE_NOOP("parameters", "DRY: repeated sequences up to this length are not penalised."),
    QT_TRANSLATE_NOOP("parameters", "DRY: how many of the last ids it scans for repeats (-1: all of them, 0: none, "
                      "which turns DRY off)."),
    QT_TRANSLATE_NOOP("parameters", "DRY: a repeat does not extend across these strings."),
    QT_TRANSLATE_NOOP("parameters", "Keep the tokens whose logit is within top_n_sigma standard deviations (of the "
                      "finite logits) of the largest logit."),
    QT_TRANSLATE_NOOP("parameters", "XTC (exclude top choices): with this probability per step, drop every token at "
                      "least as likely as xtc_threshold except the least likely of them."),
    QT_TRANSLATE_NOOP("parameters", "XTC: the probability a top choice must reach to be excluded (above 0.5 XTC does "
                      "nothing)."),
    QT_TRANSLATE_NOOP("parameters", "Mirostat: keep the text's surprise near mirostat_tau by truncating each step "
                      "with a running threshold mu (1: version 1, 2: version 2; 0: off)."),
    QT_TRANSLATE_NOOP("parameters", "Mirostat: the target surprise in bits (mu starts at twice it)."),
    QT_TRANSLATE_NOOP("parameters", "Mirostat: the learning rate of mu."),
    QT_TRANSLATE_NOOP("parameters", "Dynamic temperature: a temperature between temperature - dynatemp_range and "
                      "temperature + dynatemp_range, higher where the distribution's entropy is higher (in place "
                      "of temperature)."),
    QT_TRANSLATE_NOOP("parameters", "Dynamic temperature: the exponent applied to the normalised entropy."),
    QT_TRANSLATE_NOOP("parameters", "Adaptive sampling (entropix-style): each step takes the most likely token, "
                      "samples, or samples wider (higher temperature, top-k) by the raw distribution's entropy and "
                      "varentropy."),
    QT_TRANSLATE_NOOP("parameters", "This lane's own limit on new tokens (unset: the run's max_new_tokens)."),
    QT_TRANSLATE_NOOP("parameters", "Stop the lane as soon as its text contains one of these strings."),
    QT_TRANSLATE_NOOP("parameters", "Beam search: a finished hypothesis scores sum(logprobs) / length^length_penalty;"
                      " above 0 favours longer sequences, below 0 shorter ones."),
    QT_TRANSLATE_NOOP("parameters", "Beam search: true stops when num_beams hypotheses are finished, false when no "
                      "better one is likely, \"never\" when no better one can exist."),
    QT_TRANSLATE_NOOP("parameters", "Beam search: how many finished hypotheses the lane returns (at most num_beams)."),
    QT_TRANSLATE_NOOP("parameters", "Seed of this lane's own random generator: the same seed gives the same draws, "
                      "whatever the other lanes do (unset: derived from the lane name and the run's "
                      "seed)."),
)


# Each parameter's label in the lane editor: its Hugging Face (or llama.cpp) name in English, a word in the
# interface's language elsewhere (the name itself then in the tooltip). tests/gui/test_i18n.py checks every
# parameter is listed.
PARAMETER_LABELS = (QT_TRANSLATE_NOOP("parameter_labels", "do_sample"),
                    QT_TRANSLATE_NOOP("parameter_labels", "num_beams"),
                    QT_TRANSLATE_NOOP("parameter_labels", "temperature"),
                    QT_TRANSLATE_NOOP("parameter_labels", "top_k"), QT_TRANSLATE_NOOP("parameter_labels", "top_p"),
                    QT_TRANSLATE_NOOP("parameter_labels", "min_p"),
                    QT_TRANSLATE_NOOP("parameter_labels", "typical_p"),
                    QT_TRANSLATE_NOOP("parameter_labels", "repetition_penalty"),
                    QT_TRANSLATE_NOOP("parameter_labels", "no_repeat_ngram_size"),
                    QT_TRANSLATE_NOOP("parameter_labels", "min_new_tokens"),
                    QT_TRANSLATE_NOOP("parameter_labels", "epsilon_cutoff"),
                    QT_TRANSLATE_NOOP("parameter_labels", "eta_cutoff"),
                    QT_TRANSLATE_NOOP("parameter_labels", "suppress_tokens"),
                    QT_TRANSLATE_NOOP("parameter_labels", "bad_words_ids"),
                    QT_TRANSLATE_NOOP("parameter_labels", "sequence_bias"),
                    QT_TRANSLATE_NOOP("parameter_labels", "frequency_penalty"),
                    QT_TRANSLATE_NOOP("parameter_labels", "presence_penalty"),
                    QT_TRANSLATE_NOOP("parameter_labels", "penalty_last_n"),
                    QT_TRANSLATE_NOOP("parameter_labels", "dry_multiplier"),
                    QT_TRANSLATE_NOOP("parameter_labels", "dry_base"),
                    QT_TRANSLATE_NOOP("parameter_labels", "dry_allowed_length"),
                    QT_TRANSLATE_NOOP("parameter_labels", "dry_penalty_last_n"),
                    QT_TRANSLATE_NOOP("parameter_labels", "dry_sequence_breakers"),
                    QT_TRANSLATE_NOOP("parameter_labels", "top_n_sigma"),
                    QT_TRANSLATE_NOOP("parameter_labels", "xtc_probability"),
                    QT_TRANSLATE_NOOP("parameter_labels", "xtc_threshold"),
                    QT_TRANSLATE_NOOP("parameter_labels", "mirostat"),
                    QT_TRANSLATE_NOOP("parameter_labels", "mirostat_tau"),
                    QT_TRANSLATE_NOOP("parameter_labels", "mirostat_eta"),
                    QT_TRANSLATE_NOOP("parameter_labels", "dynatemp_range"),
                    QT_TRANSLATE_NOOP("parameter_labels", "dynatemp_exponent"),
                    QT_TRANSLATE_NOOP("parameter_labels", "adaptive"),
                    QT_TRANSLATE_NOOP("parameter_labels", "max_new_tokens"),
                    QT_TRANSLATE_NOOP("parameter_labels", "stop_strings"),
                    QT_TRANSLATE_NOOP("parameter_labels", "length_penalty"),
                    QT_TRANSLATE_NOOP("parameter_labels", "early_stopping"),
                    QT_TRANSLATE_NOOP("parameter_labels", "num_return_sequences"),
                    QT_TRANSLATE_NOOP("parameter_labels", "seed"))


def parameter_label(name: str) -> str:
    """The lane editor's label of a parameter (its HF name where the language keeps it)."""
    return translate("parameter_labels", name)


FIELDS: tuple[Field, ...] = tuple(_field(p) for p in PARAMETERS)
FIELDS_BY_NAME = {f.name: f for f in FIELDS}
BEAM_ONLY = frozenset(f.name for f in FIELDS if f.needs_beams)
EARLY_STOPPING_CHOICES = FIELDS_BY_NAME["early_stopping"].choices


def field_applies(f: Field, do_sample: bool, num_beams: int) -> bool:
    """Whether the parameter means anything for this strategy (the editor disables the others)."""
    return f.applies_to.include(do_sample, num_beams)


def display_value(spec: LaneSpec, f: Field) -> Any:
    """The value a widget shows for the spec: its own value, or the field's off value when unset."""
    value = getattr(spec, f.name)
    if f.name == "early_stopping":
        return str(value)
    if f.kind in LIST_KINDS:
        return format_list(parameter(f.name), value)
    return f.off if value is None else value


def spec_from_values(name: str, values: dict[str, Any], base: LaneSpec | None = None) -> LaneSpec:
    """Build a LaneSpec from widget values (and `processor_order`, the chain editor's: None for transformers'
    order; `model`, the model field's: None for the run's model). Parameters that do not apply take their
    LaneSpec default, those at their off value are left unset (None), so the lane applies exactly what the user
    set; what `values` leaves out stays as in `base`. Raises ValueError (from LaneSpec) on invalid input."""
    do_sample = bool(values.get("do_sample", False))
    num_beams = int(values.get("num_beams", 1))
    kwargs: dict[str, Any] = {"do_sample": do_sample, "num_beams": num_beams}
    for p in PARAMETERS:
        if p.name in kwargs:
            continue
        if not p.applies_to.include(do_sample, num_beams):
            kwargs[p.name] = p.default
        elif p.name in values:
            kwargs[p.name] = _spec_value(FIELDS_BY_NAME[p.name], values[p.name])
    for key in ("processor_order", "model"):  # the chain editor's order, the model field's name (None: the run's)
        if key in values:
            kwargs[key] = values[key]
    if base is not None:
        return base.with_changes(name=name, **kwargs)
    return LaneSpec(name=name, **kwargs)


def _spec_value(f: Field, value: Any) -> Any:
    p = parameter(f.name)
    if f.name == "early_stopping":
        return {"True": True, "False": False}.get(value, value)
    if f.kind in LIST_KINDS:
        return parse_list(p, value)
    if p.default is not None:  # a value of its own everywhere (beam settings, companions): never unset
        return value
    return None if value == f.off else value


def describe(spec: LaneSpec, seed: bool = True) -> str:
    """A short strategy summary for headers and lists, e.g. 'beam 4', 'sample T 1.3 · top-p 0.9 · seed 0'."""
    if spec.is_beam:
        parts = [translate("lane_fields", "beam {beams}").format(beams=spec.num_beams)]
        if spec.length_penalty != 1.0:
            parts.append(f"lp {spec.length_penalty:g}")
    elif spec.do_sample:
        parts = [translate("lane_fields", "sample")]
        parts += [f"{_SHORT.get(name, name)} {value_text(getattr(spec, name))}" for name in _summarised(spec)]
        if spec.adaptive:
            parts.append(translate("lane_fields", "adaptive"))
        if seed and spec.seed is not None:
            parts.append(translate("lane_fields", "seed {seed}").format(seed=spec.seed))
    else:
        parts = [translate("lane_fields", "greedy")]
    if spec.repetition_penalty not in (None, 1.0):
        parts.append(f"rep {spec.repetition_penalty:g}")
    if spec.no_repeat_ngram_size:
        parts.append(f"no-repeat {spec.no_repeat_ngram_size}")
    order = order_choice(spec)
    if order != "transformers":
        parts.append(order_name(order))
    if spec.max_new_tokens:
        parts.append(translate("lane_fields", "max {count}").format(count=spec.max_new_tokens))
    if spec.stop_strings:
        parts.append(translate("lane_fields", "stop {strings}").format(strings=format_stop_strings(spec.stop_strings)))
    parts += [translate("lane_fields", "forced @{step}").format(step=step) for step in sorted(spec.forced)]
    if spec.branch is not None:
        branch = translate("lane_fields", "branch of {parent} @ {step}")
        parts.append(branch.format(parent=spec.branch.parent, step=spec.branch.step))
    if spec.model is not None:
        parts.append(model_label(spec.model))
    return " · ".join(parts)


def _summarised(spec: LaneSpec) -> list[str]:
    """The processors a sampled lane's summary names with their values, in its chain's order (the penalties have
    their own words, after the strategy)."""
    return [name for name in spec.processors() if name not in ("repetition_penalty", "no_repeat_ngram_size")]


_SHORT = {"temperature": "T", "top_k": "top-k", "top_p": "top-p", "min_p": "min-p", "typical_p": "typical"}


# What the spin boxes show for "unset" (decoding.chain.parameters' unset_label), for the catalogue.
UNSET_LABELS = (QT_TRANSLATE_NOOP("lane_fields", "run's"), QT_TRANSLATE_NOOP("lane_fields", "auto"),
                QT_TRANSLATE_NOOP("lane_fields", "all"))

# The presets' titles (decoding.chain.spec.PRESETS), for the catalogue; shown through preset_title.
PRESET_TITLES = (QT_TRANSLATE_NOOP("presets", "Greedy"), QT_TRANSLATE_NOOP("presets", "Beam 4"),
                 QT_TRANSLATE_NOOP("presets", "Top-k 50"), QT_TRANSLATE_NOOP("presets", "Top-p 0.9"),
                 QT_TRANSLATE_NOOP("presets", "Temperature 1.3"), QT_TRANSLATE_NOOP("presets", "Min-p 0.05"),
                 QT_TRANSLATE_NOOP("presets", "creative"), QT_TRANSLATE_NOOP("presets", "precise"))


def preset_title(title: str) -> str:
    """A preset's title (a key of PRESETS) as the interface language says it."""
    return translate("presets", title)
