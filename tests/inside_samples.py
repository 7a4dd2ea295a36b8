"""Hand-built explained runs for the inside views' tests: a prompt and a lane whose explanation (attention and logit
lens) is designed, so what each view must draw is known.

English: "<|im_start|>Although I was tired, but" + the lane's " I went". Every attention row gives SINK to position
0 and spreads the rest evenly, except the designed cells: layer 1, head 1 gives 0.3 from " but" to "Although".
The lens after " but" has ", " on top up to row 1 and " I" from row 2 on (the final choice settles at row 2).
Chinese: "<|im_start|>我虽然很累，但" + "还是", the characters split into byte-level tokens as SmolLM2's tokenizer
splits them (我 = 2 tokens, 虽 = 3, ...); layer 1, head 1 gives 0.3 from 但's last token to 虽's first.
"""

from __future__ import annotations

import numpy as np

from decoding.analysis.analysis import analyze
from decoding.records.explain import ExplainResult, LogitLens, TokenInfo
from decoding.records.trace import LaneTrace, ModelInfo, PromptInfo, RunTrace, StepRecord, TokenProb

LAYERS, HEADS, TOP_K = 3, 2, 3
SINK = 0.6
DESIGNED = 0.3  # layer 1, head 1: the contrast word → the concessive one
START = "<|im_start|>"


def byte_pieces(character: str, sizes: list[int]) -> list[str]:
    """A character's UTF-8 bytes split into pieces of `sizes` bytes, written as runtime.Tokenizer.piece writes an
    incomplete character (\\xNN escapes)."""
    data, pieces, start = character.encode("utf-8"), [], 0
    for size in sizes:
        pieces.append("".join(f"\\x{b:02x}" for b in data[start:start + size]))
        start += size
    return pieces


ENGLISH = {
    "prompt": [START, "Although", " I", " was", " tired", ",", " but"],
    "lane": [" I", " went"],
    "contrast": 6,  # " but"
    "concessive": 1,  # "Although"
}
CHINESE = {
    "prompt": [START, *byte_pieces("我", [2, 1]), *byte_pieces("虽", [1, 1, 1]), *byte_pieces("然", [1, 1, 1]),
               *byte_pieces("很", [2, 1]), *byte_pieces("累", [1, 1, 1]), "，", *byte_pieces("但", [2, 1])],
    "lane": [*byte_pieces("还", [2, 1]), "是"],
    "contrast": 16,  # 但's last token
    "concessive": 3,  # 虽's first token
}


def designed_attention(length: int, looks: dict[tuple[int, int, int, int], float]) -> np.ndarray:
    """[LAYERS, HEADS, T, T]: SINK on position 0, `looks` {(layer, head, query, key): weight}, the rest of each
    row spread evenly over its other positions 1..query (row 0: all on position 0)."""
    weights = np.zeros((LAYERS, HEADS, length, length), dtype=np.float32)
    for layer in range(LAYERS):
        for head in range(HEADS):
            weights[layer, head, 0, 0] = 1.0
            for query in range(1, length):
                fixed = {key: w for (l_, h_, q_, key), w in looks.items() if (l_, h_, q_) == (layer, head, query)}
                others = [key for key in range(1, query + 1) if key not in fixed]
                rest = 1.0 - SINK - sum(fixed.values())
                weights[layer, head, query, 0] = SINK
                for key in others:
                    weights[layer, head, query, key] = rest / len(others)
                for key, w in fixed.items():
                    weights[layer, head, query, key] = w
    return weights


def designed_lens(ids: list[int], contrast: int, comma: int, settled: int) -> tuple[np.ndarray, np.ndarray]:
    """[LAYERS + 1, T, TOP_K] ids and probabilities: after each position the next token's id first, then two
    others; after `contrast`, `comma` leads until row 1 and the next token from row `settled` on."""
    length = len(ids)
    lens_ids = np.zeros((LAYERS + 1, length, TOP_K), dtype=np.int64)
    lens_probs = np.zeros((LAYERS + 1, length, TOP_K), dtype=np.float32)
    for position in range(length):
        following = ids[position + 1] if position + 1 < length else 900
        for row in range(LAYERS + 1):
            top = [following, 901, 902]
            if position == contrast and row < settled:
                top = [comma, following, 901]
            lens_ids[row, position] = top
            lens_probs[row, position] = [0.2 + 0.15 * row, 0.15, 0.1]
    return lens_ids, lens_probs


def record(step: int, token_id: int, text: str) -> StepRecord:
    top = [TokenProb(token_id, text, 0.7, 0), TokenProb(950, "x", 0.2, 1)]
    return StepRecord(step=step, token_id=token_id, token_text=text, prob=0.7, prob_raw=0.6, logprob=-0.36,
                      logprob_raw=-0.51, entropy=0.8, entropy_raw=1.0, margin=0.5, margin_raw=0.4, kept=2,
                      tail_mass=0.1, tail_mass_raw=0.2, top=top, top_raw=top)


def explained_trace(sample: dict) -> RunTrace:
    """A run of one greedy lane over the sample, its explanation stored; ids: 1 for <|im_start|>, then 100, 101…
    by piece (a piece repeated gets its first id)."""
    pieces = sample["prompt"] + sample["lane"]
    vocab: dict[str, int] = {START: 1}
    for piece in pieces:
        vocab.setdefault(piece, 100 + len(vocab))
    ids = [vocab[piece] for piece in pieces]
    prompt_length = len(sample["prompt"])
    lane_ids = ids[prompt_length:]
    steps = [record(step, token_id, text) for step, (token_id, text) in enumerate(zip(lane_ids, sample["lane"],
                                                                                      strict=True))]
    lane = LaneTrace(name="greedy", config={"do_sample": False}, processors=[], token_ids=lane_ids,
                     text="".join(sample["lane"]), steps=steps, finish_reason="length")
    prompt = PromptInfo("".join(sample["prompt"][1:]), ids[:prompt_length], chat=True, rendered=None)
    model = ModelInfo("samples")
    trace = RunTrace(model=model, provider="CPUExecutionProvider", prompt=prompt, lanes=[lane])
    trace.analysis = analyze(trace)
    looks = {(1, 1, sample["contrast"], sample["concessive"]): DESIGNED}
    lens_ids, lens_probs = designed_lens(ids, sample["contrast"], comma=777, settled=2)
    texts = {i: p for p, i in vocab.items()} | {777: ",", 900: "<end>", 901: " the", 902: " a", 950: "x"}
    tokens = [TokenInfo(i, p, list(_bytes(p))) for i, p in zip(ids, pieces, strict=True)]
    lens = LogitLens.whole(lens_ids, lens_probs, {int(i): texts[int(i)] for i in np.unique(lens_ids)})
    trace.explanations = [ExplainResult(model, "CPUExecutionProvider", prompt_length, tokens,
                                        designed_attention(len(ids), looks), lens)]
    return trace


def _bytes(piece: str) -> bytes:
    from gui.present.lane_html import piece_bytes

    return piece_bytes(piece)


def explained_model(sample: dict):
    """A RunState showing the sample's explained run."""
    from decoding.chain.spec import specs_of
    from gui.state.run_state import RunState

    model = RunState()
    trace = explained_trace(sample)
    model.show_trace(trace, specs_of(trace))
    return model
