"""Lanes on a served model, against a small fake server per protocol on 127.0.0.1 (tests/fake_server.py): the same
tokens as the model run locally, honest partial distributions, the requests each protocol sends (slots, cache,
bounded concurrency), every fault a message in the lane with its steps kept while the local lanes go on, Stop
aborting requests in flight, run files that record the server and no key, replays."""

from __future__ import annotations

import re
import threading
import time

import numpy as np
import pytest

from decoding.chain.parameters import ParameterError
from decoding.chain.spec import LaneSpec, parse_lane
from decoding.engine.engine import Engine
from decoding.engine.replay import compare, replay
from decoding.records import jsonio
from decoding.records.trace import PromptInfo
from models.served_lane import served_lane_model
from runtime.served import connect, parse_address, test_connection
from tests.fake_server import FakeModelServer
from tests.fake_source import FakeSource, FakeTokenizer

PROTOCOLS = ("llamacpp", "vllm", "sglang")
PROMPT = PromptInfo("<1><2>", [1, 2])


class TextTokenizer(FakeTokenizer):
    """FakeTokenizer that encodes too ("<5><7>" -> [5, 7]), as the fake server's /tokenize does."""

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return [int(t) for t in re.findall(r"<(\d+)>", text)]


@pytest.fixture(params=PROTOCOLS)
def server(request):
    fake = FakeModelServer(request.param).start()
    yield fake
    fake.stop()


@pytest.fixture
def llamacpp():
    fake = FakeModelServer("llamacpp").start()
    yield fake
    fake.stop()


def engine(vocab_size: int = 64) -> Engine:
    return Engine(FakeSource(vocab_size=vocab_size), TextTokenizer(), [3],
                  models=lambda name: served_lane_model(name, TextTokenizer(), vocab_size))


def lane(kind: str, name: str, model: str | None = None) -> LaneSpec:
    spec = parse_lane(kind)
    return LaneSpec(**{**spec.__dict__, "name": name, "model": model})


def test_a_served_lane_reads_the_same_model_as_the_local_lane(server):
    """alternatives=all: the whole vocabulary each step, so greedy and seeded sampling give the local lanes' tokens
    and probabilities (float32 logits vs log-softmax through JSON: within 1e-6), and nothing is partial."""
    name = server.name + "?alternatives=all"
    specs = [lane("greedy", "local"), lane("greedy", "served", name),
             lane("sample:seed=5,temperature=0.8", "local-s"), lane("sample:seed=5,temperature=0.8", "served-s", name)]
    trace = engine().run(PROMPT, specs, max_new_tokens=12)
    local, served, local_s, served_s = trace.lanes
    assert trace.error is None and served.error is None
    assert served.token_ids == local.token_ids and served_s.token_ids == local_s.token_ids
    for a, b in zip(local.steps + local_s.steps, served.steps + served_s.steps, strict=True):
        assert b.prob_raw == pytest.approx(a.prob_raw, abs=1e-6) and b.entropy_raw == pytest.approx(a.entropy_raw, 1e-5)
        assert b.unseen_mass == 0.0 and a.unseen_mass is None
    assert served.model.served == {**served.model.served, "protocol": server.protocol, "url": server.url,
                                   "model": "fake-model", "vocab_size": 64, "alternatives": 64}
    assert served.model.tokenizer is None  # the same tokenizer: compared token by token


def test_a_partial_lane_records_the_mass_it_did_not_see(server):
    """alternatives=8 of 64: the chain runs on the 8 returned (renormalised), each step records the probability
    outside them, and a raw probability times (1 - unseen) is the model's own."""
    trace = engine().run(PROMPT, [lane("greedy", "local"), lane("greedy", "served", server.name + "?alternatives=8")],
                         max_new_tokens=6)
    local, served = trace.lanes
    assert served.token_ids == local.token_ids  # the argmax is always among the returned
    for a, b in zip(local.steps, served.steps, strict=True):
        true = np.sort([entry.prob for entry in a.top_raw])[::-1][:8]
        assert b.unseen_mass == pytest.approx(1 - true.sum(), abs=1e-6)
        assert b.prob_raw * (1 - b.unseen_mass) == pytest.approx(a.prob_raw, abs=1e-6)
        assert b.kept == 8 and len(b.top_raw) == 8


def test_llamacpp_requests_keep_one_slot_per_lane_and_the_cache(llamacpp):
    specs = [lane("greedy", "g", llamacpp.name), lane("sample:seed=1", "s", llamacpp.name)]
    engine().run(PROMPT, specs, max_new_tokens=4)
    steps = [body for path, body in llamacpp.requests if path == "/completion"]
    assert all(body["cache_prompt"] and body["n_probs"] == 64 and body["n_predict"] == 1 for body in steps)
    assert all(body["logit_bias"] == [[7, 1000.0]] for body in steps)  # "<7>" is "a" here: see LlamaCpp
    slots_per_request = [(tuple(body["prompt"][:3]), body["id_slot"]) for body in steps]
    by_prefix: dict = {}
    for prefix, slot in slots_per_request:
        by_prefix.setdefault(prefix, set()).add(slot)
    assert all(len(slots) == 1 for slots in by_prefix.values())  # a lane's sequence stays on its slot


def test_a_fanout_sends_its_rows_at_once_bounded_by_parallel(llamacpp):
    llamacpp.delay_s = 0.05
    name = llamacpp.name + "?parallel=3"
    specs = [lane(f"sample:seed={k},temperature=2.0", f"m{k}", name) for k in range(6)]
    started = time.perf_counter()
    trace = engine().run(PROMPT, specs, max_new_tokens=3)
    assert all(lane.error is None for lane in trace.lanes)
    assert llamacpp.max_in_flight == 3  # concurrent, and never more than parallel
    assert time.perf_counter() - started < 6 * 3 * 0.05  # faster than one request after another


FAULT_MESSAGES = {
    "drop": "closed the connection",
    "http500": "HTTP 500: CUDA out of memory",
    "http400": "HTTP 400: n_probs exceeds the limit",
    "malformed": "not JSON",
    "truncated": "cut off",
    "model_changed": "model changed from 'fake-model' to 'another-model'",
    "bad_id": "outside the vocabulary of 64",
}


@pytest.mark.parametrize("fault", sorted(FAULT_MESSAGES))
def test_each_fault_ends_the_served_lane_with_its_message_and_steps(server, fault):
    if fault == "bad_id" and server.protocol != "llamacpp":
        pytest.skip("one protocol is enough for an id outside the vocabulary")
    if fault == "model_changed" and server.protocol == "sglang":
        pytest.skip("SGLang's answers do not name the model (docs/served.md: a change there goes unseen)")
    server.fault, server.fault_after = fault, 3  # the prefill and two steps answer
    trace = engine().run(PROMPT, [lane("greedy", "local"), lane("greedy", "served", server.name)], max_new_tokens=8)
    local, served = trace.lanes
    assert trace.error is None and local.finish_reason == "length" and len(local.steps) == 8
    assert served.finish_reason == "error" and FAULT_MESSAGES[fault] in served.error, served.error
    assert served.error.startswith("step 3 failed: ServerError: ") and server.url in served.error
    assert len(served.steps) == 3 and served.token_ids == local.token_ids[:3]


def test_a_slow_server_times_out_in_words(llamacpp):
    llamacpp.fault, llamacpp.fault_after = "slow", 2
    trace = engine().run(PROMPT, [lane("greedy", "local"), lane("greedy", "served", llamacpp.name + "?timeout=0.3")],
                         max_new_tokens=4)
    assert "no answer within 0.3 s" in trace.lanes[1].error and "timeout=" in trace.lanes[1].error
    assert len(trace.lanes[1].steps) == 2 and trace.lanes[0].finish_reason == "length"


def test_a_server_that_stops_mid_run_refuses_the_next_step():
    fake = FakeModelServer("llamacpp").start()
    stopped = []

    def on_step(index, record):
        if index == 1 and record.step == 1 and not stopped:
            fake.stop()
            stopped.append(True)

    trace = engine().run(PROMPT, [lane("greedy", "local"), lane("greedy", "served", fake.name)], max_new_tokens=5,
                         on_step=on_step)
    assert "connection refused" in trace.lanes[1].error and len(trace.lanes[1].steps) == 2
    assert trace.lanes[0].finish_reason == "length"


def test_nothing_listening_is_refused_before_the_run_naming_the_lane():
    with pytest.raises(ParameterError, match=r"served.*connection refused: nothing listens there"):
        engine().start(PROMPT, [lane("greedy", "served", "llamacpp+http://127.0.0.1:9")], max_new_tokens=4)


@pytest.mark.parametrize("stop", ["run.cancel", "the window's event"])
def test_stop_aborts_the_requests_in_flight(llamacpp, stop):
    llamacpp.fault, llamacpp.fault_after = "slow", 2  # each of those requests would wait 30 s
    name, event = llamacpp.name + "?timeout=60", threading.Event()
    run = engine().start(PROMPT, [lane("greedy", "served", name)], max_new_tokens=8, cancel=event)
    records = []
    worker = threading.Thread(target=lambda: records.extend(run))
    worker.start()
    source = run.lane_models[name].source
    deadline = time.monotonic() + 10
    while (len(records) < 2 or source.in_flight == 0) and time.monotonic() < deadline:  # the slow one in flight
        time.sleep(0.01)
    assert source.in_flight == 1
    started = time.monotonic()
    run.cancel() if stop == "run.cancel" else event.set()
    worker.join(5)
    assert not worker.is_alive() and time.monotonic() - started < 2
    assert run.trace.lanes[0].finish_reason == "cancelled" and len(run.trace.lanes[0].steps) == 2


def test_the_run_file_records_the_server_and_no_key(llamacpp, monkeypatch):
    monkeypatch.setenv("BRANCHPOINT_TEST_KEY", "sk-secret-123")
    name = llamacpp.name + "?key_env=BRANCHPOINT_TEST_KEY&alternatives=16"
    trace = engine().run(PROMPT, [lane("greedy", "local"), lane("sample:seed=2", "served", name)], max_new_tokens=5)
    assert llamacpp.authorizations == {"Bearer sk-secret-123"}
    text = jsonio.dumps(trace)
    assert "sk-secret-123" not in text and "BRANCHPOINT_TEST_KEY" in text  # where the key comes from, not the key
    again = jsonio.loads(text)
    assert jsonio.dumps(again) == text
    assert again.lanes[1].model.served["alternatives"] == 16 and again.lanes[1].steps[2].unseen_mass > 0
    assert '"unseen_mass"' not in text.split('"name": "served"')[0]  # the local lane's steps have none


def test_a_replay_on_the_server_is_exact_and_a_changed_one_says_where(llamacpp):
    specs = [lane("greedy", "local"), lane("sample:seed=9,temperature=1.5", "served", llamacpp.name)]
    trace = engine().run(PROMPT, specs, max_new_tokens=8)
    recorded = jsonio.loads(jsonio.dumps(trace))
    assert compare(recorded, replay(engine(), recorded)) == []
    llamacpp.model.peak = 2.0  # the served model's numbers change: the sampled lane moves
    mismatches = compare(recorded, replay(engine(), recorded))
    assert [m.lane for m in mismatches] == ["served"]
    assert mismatches[0].step is not None and "recorded" in mismatches[0].describe()


def test_another_tokenizer_brings_its_own(llamacpp):
    """A server whose tokenizer reads the probe otherwise: the lane encodes the prompt on the server, names its
    tokens with the server's pieces and stops at its eos; it is compared by text."""

    class OtherTokenizer(TextTokenizer):
        def encode(self, text, add_special_tokens=True):
            return [7, *super().encode(text)]

    eng = Engine(FakeSource(), OtherTokenizer(), [3],
                 models=lambda name: served_lane_model(name, OtherTokenizer(), 64))
    trace = eng.run(PROMPT, [lane("greedy", "local"), lane("greedy", "served", llamacpp.name)], max_new_tokens=4)
    served = trace.lanes[1]
    assert served.model.tokenizer.startswith("served:") and served.prompt_ids == [1, 2]
    assert served.steps[0].token_text == f"<{served.token_ids[0]}>"


def test_test_connection_reports_model_vocabulary_and_alternatives(server):
    report = test_connection(server.name + "?alternatives=10", run_vocab_size=64, text="<1><2>")
    assert (report["model"], report["vocab_size"], report["asked"], report["returned"]) == ("fake-model", 64, 10, 10)
    assert 0 < report["unseen_mass"] < 1 and "top 10 (partial)" in report["summary"]


def test_a_server_without_its_vocabulary_size_needs_vocab():
    fake = FakeModelServer("vllm").start()
    try:
        with pytest.raises(ValueError, match="vocab=N"):
            connect(fake.name)
        assert connect(fake.name + "?vocab=64").source.vocab_size == 64
    finally:
        fake.stop()


@pytest.mark.parametrize(("name", "message"), [
    ("ollama+http://x:1", "PROTOCOL one of llamacpp, vllm, sglang"),
    ("llamacpp+ftp://x", "allowed http://HOST:PORT"),
    ("llamacpp+http://x:99999", "invalid port"),
    ("llamacpp+http://x:1?alternatives=0", "invalid alternatives=0: allowed an integer 1..1e+07 or all"),
    ("llamacpp+http://x:1?timeout=soon", "invalid timeout=soon"),
    ("llamacpp+http://x:1?parallel=0", "invalid parallel=0"),
    ("llamacpp+http://x:1?top=5", "unknown option 'top'"),
])
def test_a_bad_address_is_refused_in_words(name, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_address(name)


def test_an_unset_key_variable_is_refused(llamacpp, monkeypatch):
    monkeypatch.delenv("BRANCHPOINT_NO_SUCH_KEY", raising=False)
    with pytest.raises(ValueError, match="invalid key_env=BRANCHPOINT_NO_SUCH_KEY"):
        connect(llamacpp.name + "?key_env=BRANCHPOINT_NO_SUCH_KEY")
