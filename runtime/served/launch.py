"""Start llama.cpp's server on this machine for a GGUF (the slow tests and the bench serve the default model's own
GGUF with it): the binary scripts/llama_cpp.sh builds, bound to 127.0.0.1 on a free port, waited on until /health
says ok, stopped with the process."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

LLAMA_CPP_VERSION = "0.3.36"


def built_server() -> Path | None:
    """bin/llama-server of scripts/llama_cpp.sh's finished build in the cache, or None."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = cache / "branchpoint" / "llama.cpp" / LLAMA_CPP_VERSION
    binary = root / "bin" / "llama-server"
    return binary if (root / ".built").is_file() and binary.is_file() else None


@dataclass
class LlamaServer:
    process: subprocess.Popen
    url: str
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(self, *_exc) -> None:
        self.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_llama_server(binary: Path, gguf: Path, log: Path, slots: int = 4, threads: int = 2, context: int = 4096,
                       extra: tuple[str, ...] = (), wait_s: float = 180.0) -> LlamaServer:
    """llama-server on 127.0.0.1 serving `gguf` with `slots` slots of context/slots positions each (no continuous
    batching: one request, one slot, deterministic); its output goes to `log`. RuntimeError, with the log's tail,
    when it exits or does not say ok within `wait_s`."""
    port = free_port()
    command = [str(binary), "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port), "-c", str(context),
               "-np", str(slots), "-t", str(threads), "--no-cont-batching", "--no-webui", *extra]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    server = LlamaServer(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama-server exited with {process.returncode}: {_tail(log)}")
        try:
            with urllib.request.urlopen(server.url + "/health", timeout=2) as answer:
                if answer.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"llama-server did not say ok within {wait_s:g} s: {_tail(log)}")


def _tail(log: Path, lines: int = 8) -> str:
    try:
        return " | ".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
