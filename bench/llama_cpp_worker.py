"""llama.cpp's own greedy decoding of a GGUF, in a process of its own (the bench item `llama_cpp` drives it so its
threads never share a process with ONNX Runtime's): llama-cpp-python's low-level API, the whole logits row read
into numpy every step and its argmax taken, as a Branchpoint greedy lane reads the whole row.

    python bench/llama_cpp_worker.py GGUF THREADS [--no-repack]

Reads requests from stdin, one JSON object a line, each answered on one line of stdout:
- {"prompt": [ids], "tokens": N} → {"seconds": s, "ids": [...]}: the wall time of the prompt's decode plus N greedy
  tokens, from an empty cache;
- {"score": [ids], "out": PATH} → {"rows": T}: the logits of every position of the sequence (float32 [T, vocab], as
  llama-perplexity reads them for its KL scoreboard) written to PATH.
The first line it writes is {"ready": true, "vocab": V} (or {"error": "..."} and exit 1)."""

from __future__ import annotations

import json
import sys
import time

import numpy as np

WINDOW = 1024  # the longest sequence a request may hold (the bench's text-set windows are 512)


def load(path: str, threads: int, repack: bool):
    import llama_cpp.llama_cpp as ll

    ll.llama_backend_init()
    model_params = ll.llama_model_default_params()
    model_params.use_extra_bufts = repack  # the CPU weight repack (a segfault on some processors: --no-repack)
    model = ll.llama_model_load_from_file(path.encode(), model_params)
    if not model:
        raise RuntimeError(f"llama.cpp could not load {path}")
    context_params = ll.llama_context_default_params()
    context_params.n_ctx = context_params.n_batch = context_params.n_ubatch = WINDOW
    context_params.n_threads = context_params.n_threads_batch = threads
    context = ll.llama_init_from_model(model, context_params)
    vocab = ll.llama_vocab_n_tokens(ll.llama_model_get_vocab(model))
    return ll, context, vocab


def greedy(ll, context, vocab: int, prompt: list[int], tokens: int) -> list[int]:
    ll.llama_memory_clear(ll.llama_get_memory(context), True)
    ids = (ll.llama_token * len(prompt))(*prompt)
    out: list[int] = []
    batch = ll.llama_batch_get_one(ids, len(prompt))
    for _ in range(tokens):
        if ll.llama_decode(context, batch) != 0:
            raise RuntimeError("llama_decode failed")
        row = np.ctypeslib.as_array(ll.llama_get_logits_ith(context, -1), shape=(vocab,))
        token = int(np.argmax(row))
        out.append(token)
        one = (ll.llama_token * 1)(token)
        batch = ll.llama_batch_get_one(one, 1)
    return out


def score(ll, context, vocab: int, ids: list[int]) -> np.ndarray:
    """float32 logits [len(ids), vocab] of every position, one decode of the whole sequence from an empty cache."""
    ll.llama_memory_clear(ll.llama_get_memory(context), True)
    batch = ll.llama_batch_init(len(ids), 0, 1)
    try:
        batch.n_tokens = len(ids)
        for position, token in enumerate(ids):
            batch.token[position], batch.pos[position], batch.n_seq_id[position] = token, position, 1
            batch.seq_id[position][0], batch.logits[position] = 0, 1
        if ll.llama_decode(context, batch) != 0:
            raise RuntimeError("llama_decode failed")
        return np.ctypeslib.as_array(ll.llama_get_logits(context), shape=(len(ids), vocab)).copy()
    finally:
        ll.llama_batch_free(batch)


def main(argv: list[str]) -> int:
    path, threads, repack = argv[0], int(argv[1]), "--no-repack" not in argv
    try:
        ll, context, vocab = load(path, threads, repack)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which says why the item was skipped
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 1
    print(json.dumps({"ready": True, "vocab": vocab}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if "score" in request:
            logits = score(ll, context, vocab, request["score"])
            logits.tofile(request["out"])
            print(json.dumps({"rows": len(logits)}), flush=True)
            continue
        start = time.perf_counter()
        ids = greedy(ll, context, vocab, request["prompt"], request["tokens"])
        print(json.dumps({"seconds": time.perf_counter() - start, "ids": ids}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
