"""A small model server on 127.0.0.1 speaking llama.cpp's, vLLM's or SGLang's protocol over a FakeSource model (a
row's logits are a function of its whole history, so the served lane can be checked against the same model run
locally), with the faults a real server has: refused (stopped), slow, dropped mid-answer, HTTP 4xx/5xx, malformed or
truncated JSON, another model. Every request is recorded."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from tests.fake_source import FakeSource

FAULTS = ("slow", "drop", "http500", "http400", "malformed", "truncated", "model_changed", "bad_id")


class FakeModelServer:
    """`fault` (one of FAULTS) applies to next-token requests after the first `fault_after` of them."""

    def __init__(self, protocol: str, vocab_size: int = 64, model: str = "fake-model", slots: int = 4,
                 report_vocab: bool = True) -> None:
        self.protocol = protocol
        self.model = FakeSource(vocab_size=vocab_size)
        self.model_name = model
        self.slots = slots
        self.report_vocab = report_vocab
        self.fault: str | None = None
        self.fault_after = 0
        self.delay_s = 0.0  # every next-token answer waits this long (a slow server)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.authorizations: set[str | None] = set()  # the Authorization headers seen
        self.next_token_calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def name(self) -> str:
        return f"{self.protocol}+{self.url}"

    def start(self) -> FakeModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; the port stays bound (not listening) so that a connection is refused, as by a stopped
        server, and no other test process's server takes the freed port meanwhile (tests run in parallel)."""
        port = self._server.server_address[1]
        self._server.shutdown()
        self._server.server_close()
        self._port_held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._port_held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._port_held.bind(("127.0.0.1", port))

    def log_softmax(self, history: list[int]) -> np.ndarray:
        logits = self.model.logits_for(history).astype(np.float64)
        shifted = logits - logits.max()
        return shifted - np.log(np.exp(shifted).sum())

    # -- what each protocol answers --

    def answer(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if method == "GET":
            return self._describe(path)
        if path in ("/completion", "/v1/completions", "/generate"):
            return self._next_token(path, body)
        if path == "/tokenize":
            text = body.get("content", body.get("prompt", ""))
            if text == "a":  # a plain ASCII token (llama.cpp's sampled token is biased to it)
                return 200, {"tokens": [7]}
            return 200, {"tokens": [int(t) for t in re.findall(r"<(\d+)>", text)]}
        if path == "/detokenize":
            text = "".join(f"<{t}>" for t in body["tokens"])
            return 200, {{"llamacpp": "content", "vllm": "prompt", "sglang": "text"}[self.protocol]: text}
        return 404, {"error": {"message": f"no route {path}"}}

    def _describe(self, path: str) -> tuple[int, Any]:
        if self.protocol == "llamacpp" and path == "/v1/models":
            meta = {"n_ctx": 4096, "n_params": 1000} | ({"n_vocab": self.model.vocab_size} if self.report_vocab else {})
            return 200, {"object": "list", "data": [{"id": self.model_name, "meta": meta}]}
        if self.protocol == "llamacpp" and path == "/props":
            return 200, {"total_slots": self.slots, "model_path": f"/models/{self.model_name}.gguf",
                         "eos_token": "<3>"}
        if self.protocol == "vllm" and path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": self.model_name, "max_model_len": 4096}]}
        if self.protocol == "sglang" and path == "/get_model_info":
            return 200, {"model_path": self.model_name}
        return 404, {"error": "not found"}

    def _next_token(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        ids = body.get("prompt", body.get("input_ids"))
        n = body.get("n_probs", body.get("logprobs", body.get("top_logprobs_num")))
        logprobs = self.log_softmax(list(ids))
        best = np.argsort(-logprobs, kind="stable")[:n]
        model = "another-model" if self._fault() == "model_changed" else self.model_name
        if self._fault() == "bad_id":
            best = np.append(best[:-1], self.model.vocab_size + 5)
            logprobs = np.append(logprobs, np.full(8, -30.0))
        if self.protocol == "llamacpp":
            top = [{"id": int(t), "token": f"<{t}>", "bytes": list(f"<{t}>".encode()), "logprob": float(logprobs[t])}
                   for t in best]
            return 200, {"content": f"<{best[0]}>", "model": model, "id_slot": body.get("id_slot", -1),
                         "completion_probabilities": [{"id": int(best[0]), "logprob": float(logprobs[best[0]]),
                                                       "top_logprobs": top}]}
        if self.protocol == "vllm":
            top = {f"token_id:{t}": float(logprobs[t]) for t in best}
            return 200, {"model": model, "choices": [{"text": "", "logprobs": {"top_logprobs": [top]}}]}
        top = [[float(logprobs[t]), int(t), None] for t in best]
        return 200, {"text": "", "meta_info": {"output_top_logprobs": [top]}}

    def _fault(self) -> str | None:
        return self.fault if self.next_token_calls > self.fault_after else None

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                self._serve("GET", {})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                self._serve("POST", json.loads(self.rfile.read(length) or b"{}"))

            def _serve(self, method: str, body: dict[str, Any]) -> None:
                next_token = self.path in ("/completion", "/v1/completions", "/generate")
                with server._lock:
                    server.requests.append((self.path, body))
                    server.authorizations.add(self.headers.get("Authorization"))
                    if next_token:
                        server.next_token_calls += 1
                        server.in_flight += 1
                        server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    fault = server._fault() if next_token else None
                try:
                    if next_token and (server.delay_s or fault == "slow"):
                        time.sleep(server.delay_s or 30.0)
                finally:  # answered from here on (the client may send its next request before this thread ends)
                    if next_token:
                        with server._lock:
                            server.in_flight -= 1
                self._answer(method, body, fault)

            def _answer(self, method: str, body: dict[str, Any], fault: str | None) -> None:
                if fault == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                status, answer = server.answer(method, self.path, body)
                if fault == "http500":
                    status, answer = 500, {"error": {"code": 500, "message": "CUDA out of memory", "type": "server"}}
                if fault == "http400":
                    status, answer = 400, {"error": {"message": "n_probs exceeds the limit"}}
                data = json.dumps(answer).encode()
                if fault == "malformed":
                    data = b"<html>502 Bad Gateway</html>"
                length = len(data)
                if fault == "truncated":
                    data = data[: len(data) // 2]
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(length))
                self.end_headers()
                self.wfile.write(data)
                if fault == "truncated":
                    self.close_connection = True

        return Handler
