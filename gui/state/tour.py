"""The guided tour, Qt-free: one preset per phenomenon Branchpoint shows — a prompt, lanes, settings, the view
to open, what to do after the run, and a title and explanation (English in the source, Chinese in the
catalogue). The window (gui.dialogs.tour_dialog, gui.shell.tour_runner) runs a stop."""

from __future__ import annotations

from dataclasses import dataclass, field

from decoding.chain.spec import ORDER_PAIR, LaneSpec
from gui.i18n import QT_TRANSLATE_NOOP, translate

# What a stop does once its run has finished (gui.main_window.MainWindow._after_tour_run):
AFTER_ACTIONS = {
    None: "nothing",
    "replay_first_critical": "replay the branch not taken at the first critical point of lane 1",
    "temperature_fanouts": "add fan-outs of lane 0 at several temperatures and run again",
    "run_again": "run again with the same seeds and compare",
    "select_first_critical": "select the first critical point",
    "select_first_divergence": "select lane 1 where its text first departs from lane 0's",
    "explain_contrast": "explain lane 0 and show where extra['contrast'] looks back at extra['concessive']",
    "explain_journey": "explain lane 0 and show the logit lens where its choice settles latest",
    "why_contrast": "ask why lane 0 chose extra['contrast'] (its first such step) and not extra['b'] (default: the "
                    "runner-up), then explain lane 0 and show where that step looks back at extra['concessive'], "
                    "ending on the Why view",
    "select_first_step": "select lane 0's first step (the Step view shows its whole distribution)",
    "compare_models": "select lane 0 where lane 1 (on extra['variant']) departs from it, and read lane 0's tokens "
                      "with that variant (the Model comparison view)",
}


@dataclass(frozen=True)
class TourLane:
    spec: LaneSpec
    fanout: int = 1


@dataclass(frozen=True)
class TourStop:
    key: str
    title: str  # English, in the catalogue (context "tour"): shown through title()
    prompt: str
    lanes: tuple[TourLane, ...]
    view: str  # the window's chart to show: timeline, lane_map, compare, fanout, sweep, beam_tree, attention, lens…
    text: str  # English, in the catalogue: shown through text()
    chat: bool = False
    max_new_tokens: int = 32
    seed: int | None = 1
    after: str | None = None
    extra: dict = field(default_factory=dict)
    language: str | None = None  # "zh": run on a model that writes it (gui.shell.tour_runner switches to one)

    def __post_init__(self) -> None:
        if self.after not in AFTER_ACTIONS:
            raise ValueError(f"invalid after={self.after!r}: allowed {', '.join(map(str, AFTER_ACTIONS))}")


def _sample(name: str, seed: int, **parameters) -> LaneSpec:
    return LaneSpec(name, do_sample=True, seed=seed, **parameters)


STOPS: list[TourStop] = [
    TourStop(
        key="near_tie",
        title=QT_TRANSLATE_NOOP("tour", "A near-tie decides the branch"),
        prompt="Although I was tired, I still decided to",
        lanes=(TourLane(LaneSpec("greedy")), TourLane(_sample("T 1.0", 11, temperature=1.0))),
        view="compare",
        after="replay_first_critical",
        text=QT_TRANSLATE_NOOP(
            "tour",
            "Where ▲ marks a step, two strong candidates were close: a slightly different draw would have "
            "taken the runner-up. The lane added after it replays that branch not taken with the same draws "
            "everywhere else — see how far the two texts drift apart.",
        ),
    ),
    TourStop(
        key="near_tie_zh",
        title=QT_TRANSLATE_NOOP("tour", "The same, in Chinese: 虽然 … 但"),
        prompt="我虽然很累，但还是决定",
        language="zh",
        lanes=(TourLane(LaneSpec("greedy")), TourLane(_sample("T 1.0", 11, temperature=1.0))),
        view="lane_map",
        after="select_first_critical",
        text=QT_TRANSLATE_NOOP(
            "tour",
            "A Chinese prompt is split into byte-level tokens, so one character can take two or three steps; "
            "the critical points still mark where a small fluctuation picked the continuation. The lane map "
            "shows every step of both lanes at once.",
        ),
    ),
    TourStop(
        key="thermal_fanout",
        title=QT_TRANSLATE_NOOP("tour", "Thermal noise made visible: fan-outs widen with temperature"),
        prompt="Once upon a time, in a small village by the sea,",
        lanes=(TourLane(_sample("T 0.7", 3, temperature=0.7), fanout=16),),
        view="sweep",
        after="temperature_fanouts",
        max_new_tokens=24,
        text=QT_TRANSLATE_NOOP(
            "tour",
            "Each member of a fan-out draws with its own seed: at low temperature they share a long prefix, at "
            "high temperature they part almost at once. The chart shows diversity growing with temperature "
            "(the Fan-out tab shows each tree).",
        ),
    ),
    TourStop(
        key="determinism",
        title=QT_TRANSLATE_NOOP("tour", "Determinism: temperature 0 and a fixed seed"),
        prompt="The capital of France is",
        lanes=(TourLane(LaneSpec("greedy")), TourLane(_sample("T 1.0", 7, temperature=1.0))),
        view="timeline",
        after="run_again",
        max_new_tokens=24,
        text=QT_TRANSLATE_NOOP(
            "tour",
            "At temperature 0 the prompt alone fixes every token, and a sampled lane with a fixed seed is just as "
            "repeatable: running again gives the same text, token for token. If a token ever differs, the tool "
            "shows the step — a near-tie that another machine's arithmetic tipped.",
        ),
    ),
    TourStop(
        key="beam_vs_greedy",
        title=QT_TRANSLATE_NOOP("tour", "Beam vs greedy: joint optimum, local optimum"),
        prompt="The meaning of life is",
        lanes=(
            TourLane(LaneSpec("greedy")),
            TourLane(LaneSpec("beam-4", num_beams=4, num_return_sequences=4)),
            TourLane(LaneSpec("beam-8", num_beams=8, num_return_sequences=8)),
        ),
        view="beam_tree",
        max_new_tokens=32,
        text=QT_TRANSLATE_NOOP(
            "tour",
            "Greedy takes the best token at each step; beam search keeps several partial texts and returns the "
            "best whole sequence, a joint optimum rather than a local one. Its pull toward likely text often "
            "makes it shorter and more generic — compare the lanes' endings.",
        ),
    ),
    TourStop(
        key="repetition",
        title=QT_TRANSLATE_NOOP("tour", "Repetition, and the penalty that breaks it"),
        prompt="I like apples. I like apples. I like",
        lanes=(
            TourLane(LaneSpec("greedy")),
            TourLane(LaneSpec("greedy · rep 1.3", repetition_penalty=1.3)),
            TourLane(LaneSpec("greedy · no-repeat 3", no_repeat_ngram_size=3)),
        ),
        view="lane_map",
        max_new_tokens=32,
        text=QT_TRANSLATE_NOOP(
            "tour",
            "Greedy decoding falls into loops easily: once a phrase has repeated, repeating it again is the most "
            "likely choice. A repetition penalty lowers the tokens already used, and no_repeat_ngram_size bans "
            "repeated n-grams — both break the loop.",
        ),
    ),
]

# The chain's order (issue 24): the same settings and seed in transformers' order and in llama.cpp's.
STOPS += [
    TourStop(
        key="order_pair",
        title=QT_TRANSLATE_NOOP("tour", "The same settings in two orders: transformers vs llama.cpp"),
        prompt="The old lighthouse keeper opened the door and saw",
        lanes=tuple(TourLane(spec) for spec in ORDER_PAIR),
        view="compare",
        after="select_first_divergence",
        max_new_tokens=32,
        text=QT_TRANSLATE_NOOP(
            "tour",
            "Both lanes set temperature 1.5, top-k 40, top-p 0.9 and min-p 0.05 and draw with the same seed. "
            "transformers divides by the temperature first, so top-p and min-p cut a flattened distribution and "
            "keep more tokens; llama.cpp cuts first and applies the temperature last. The ◆ marks the step where "
            "their texts part: the Step tab shows the lane's chain there stage by stage, the lanes editor its "
            "order.",
        ),
    ),
]

# Inside the model (issue 13): the chat form, as the product is used; SmolLM2's heads show the delayed release
# there (" but" → "Although": layer 4 head 8 gives it 0.39, about 0.013 to each other earlier token).
STOPS += [
    TourStop(
        key="delayed_release",
        title=QT_TRANSLATE_NOOP("tour", "Delayed release: “but” looks back at “Although”"),
        prompt="Although I was tired, I still went out, but",
        chat=True,
        lanes=(TourLane(LaneSpec("greedy")),),
        view="attention",
        after="explain_contrast",
        max_new_tokens=16,
        extra={"contrast": " but", "concessive": "Although"},
        text=QT_TRANSLATE_NOOP(
            "tour",
            "Reading “but”, one attention head looks straight back at “Although”, across every word in between: "
            "the concession opened at the start is released at the contrast. The heatmap shows that head in "
            "every layer (position 0, which soaks up most attention, left out) — pick another head or token.",
        ),
    ),
    TourStop(
        key="delayed_release_zh",
        title=QT_TRANSLATE_NOOP("tour", "The same in Chinese: 但 looks back at 虽然"),
        prompt="我虽然很累，但还是决定",
        language="zh",
        chat=True,
        lanes=(TourLane(LaneSpec("greedy")),),
        view="attention",
        after="explain_contrast",
        max_new_tokens=16,
        extra={"contrast": "但", "concessive": "虽然"},
        text=QT_TRANSLATE_NOOP(
            "tour",
            "Reading 但 (“but”), a head looks back at 虽然 (“although”), even though every character here is two "
            "or three byte-level tokens. The Tokens tab shows how the characters are split.",
        ),
    ),
    TourStop(
        key="token_journey",
        title=QT_TRANSLATE_NOOP("tour", "The token's journey through the layers"),
        prompt="The capital of France is",
        lanes=(TourLane(LaneSpec("greedy")),),
        view="lens",
        after="explain_journey",
        max_new_tokens=6,
        text=QT_TRANSLATE_NOOP(
            "tour",
            "Each row is what the model would say if it stopped after that layer: the early layers mostly echo "
            "the current word, and the final choice reaches the top only late. The red frames follow it up "
            "the layers; the line above the table says where it settles.",
        ),
    ),
]

# Why A, not B (issue 35): the plain prompt, where SmolLM2 writes the ungrammatical " but" after a leading
# "Although" (with any word before "Although" it writes " he" instead: measured 2026-12-02). Knocked out,
# " tried" and " to" push toward " but"; "Although" at position 0 is also the attention sink, so hiding it moves
# more than its meaning (its push is toward " and"). In Chinese, gemma-3-270m writes 但是 after 我虽然很累，
# (p 0.29; 但 0.25): hidden, 虽然 takes 但是 to 0.03 and 我 becomes its choice, so B is 我 (but 但 against 但是
# would compare two ways of saying "but"): 虽然 pushes +4.5 toward 但是, the most after ‹bos› (the sink).
STOPS += [
    TourStop(
        key="why_but",
        title=QT_TRANSLATE_NOOP("tour", "Which words pushed “ but”?"),
        prompt="Although he tried to open the door,",
        lanes=(TourLane(LaneSpec("greedy")),),
        view="why",
        after="why_contrast",
        max_new_tokens=8,
        extra={"contrast": " but", "concessive": "Although"},
        text=QT_TRANSLATE_NOOP(
            "tour",
            "The model writes “ but” after “Although …,” (the 虽然 … 但 pattern, wrong in English). The Why tab "
            "hides each earlier word from every later one in turn and shows how much that moves “ but” against "
            "the runner-up: blue words pushed toward “ but”, orange ones away. “Although” is also the first "
            "token, where attention parks (the sink), so hiding it moves more than its meaning. The Attention "
            "tab shows where the same step looks. The next stop asks the same of 虽然 → 但.",
        ),
    ),
    TourStop(
        key="why_but_zh",
        title=QT_TRANSLATE_NOOP("tour", "The same in Chinese: did 虽然 push 但是?"),
        prompt="我虽然很累，",
        lanes=(TourLane(LaneSpec("greedy")),),
        view="why",
        after="why_contrast",
        max_new_tokens=8,
        extra={"contrast": "但是", "concessive": "虽然", "b": "我"},
        language="zh",
        text=QT_TRANSLATE_NOOP(
            "tour",
            "After 我虽然很累， (“Although I was tired,”) the model writes 但是 (“but”). The Why tab sets 但是 "
            "against 我 (“I”), what it would write if it never saw 虽然: hiding 虽然 from the later words takes "
            "但是 from most likely to nearly nothing — the concession stored at 虽然 is what calls for the "
            "contrast. The Attention tab shows where this step looks.",
        ),
    ),
]

# The seed article's own example (issue 36): after 今天天气不错，适合去 ("nice weather today, just right for going
# to …") gemma-3-270m spreads the next token over places and pastimes: 逛 0.066, 玩 0.032, 海 0.027, 户外 0.025,
# 游泳 0.022 (measured with transformers on the same GGUF).
STOPS += [
    TourStop(
        key="weather_zh",
        title=QT_TRANSLATE_NOOP("tour", "今天天气不错，适合去 …: many good next words"),
        prompt="今天天气不错，适合去",
        lanes=(TourLane(LaneSpec("greedy")), TourLane(_sample("T 1.0", 3, temperature=1.0)),
               TourLane(_sample("T 1.0 · 2", 4, temperature=1.0))),
        view="inspector",
        after="select_first_step",
        max_new_tokens=12,
        language="zh",
        text=QT_TRANSLATE_NOOP(
            "tour",
            "“Nice weather today, just right for going to …”: no single word is the answer. The Step tab shows "
            "the first step's whole distribution — 逛 (stroll), 玩 (play), 海 (the sea), 户外 (outdoors), 游泳 "
            "(swimming) … each a few percent. Greedy always takes the first; each sampled lane drew its own, and "
            "the rest of its text follows that choice.",
        ),
    ),
]

# Models side by side (issues 25, 37): the run's model against its Q8_0 variant (llama.cpp's scheme, weight-only,
# KL 0.0016 over the text set), a greedy lane on each. Teacher-forced over fp32's 32 tokens it flips one top-1,
# at step 13 where fp32's top two are 0.004 apart (the median margin of all steps: 0.38), and the free-running
# lanes part there (measured on the default model, 2026-12-02; int4 flipped far more, not only near-ties).
STOPS += [
    TourStop(
        key="quantization",
        title=QT_TRANSLATE_NOOP("tour", "Quantization noise flips near-ties"),
        prompt="Although I was tired, I still decided to",
        lanes=(TourLane(LaneSpec("greedy")), TourLane(LaneSpec("greedy · q8_0"))),
        view="model_compare",
        after="compare_models",
        max_new_tokens=32,
        extra={"variant": "q8_0"},
        text=QT_TRANSLATE_NOOP(
            "tour",
            "Both lanes decode greedily; the second one on Q8_0 weights (llama.cpp's 8-bit blocks). "
            "Quantization shifts every logit a little — the bars are the KL between the two models along the "
            "first lane's text. The summary counts the top-1 flips against the first lane's top-two margin: "
            "they happen only where its top two candidates are nearly tied (the Step tab shows them there); a "
            "shift smaller than the margin changes nothing, one larger swaps the winner, and the rest of the "
            "text follows the new branch.",
        ),
    ),
]


def stop(key: str) -> TourStop:
    for found in STOPS:
        if found.key == key:
            return found
    raise KeyError(f"no tour stop {key!r}: allowed {', '.join(s.key for s in STOPS)}")


def title(stop: TourStop) -> str:
    """The stop's title in the interface's language."""
    return translate("tour", stop.title)


def text(stop: TourStop) -> str:
    return translate("tour", stop.text)
