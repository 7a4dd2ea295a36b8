"""A local stand-in for the Hugging Face hub's file API, as huggingface_hub (0.36) asks it: point HF_ENDPOINT at
`server.url` and `HfApi.model_info`, `hf_hub_download` and `snapshot_download` talk to it.

    GET  /api/models/{repo}/revision/{rev}     JSON: id, sha, private, gated, siblings [{rfilename, size, …}]
    HEAD /{repo}/resolve/{rev}/{file}          ETag, X-Repo-Commit, Content-Length (what hf_hub_download reads
    GET  /{repo}/resolve/{rev}/{file}          before it downloads); GET honours `Range: bytes=N-` with a 206

Weights (*.safetensors, *.bin) are LFS files as on the hub: their resolve URL answers 302 to an absolute "CDN"
address on the same server (`/cdn/{repo}/{sha256}/{file}`) with X-Linked-Etag and X-Linked-Size, which
huggingface_hub reads from the HEAD without following it, and then GETs from there (with the Range of a resume).

Repositories are files in memory. A repository can need a token (401 without one, with X-Error-Code GatedRepo as
the hub answers for a gated model; 401 "Invalid credentials" for a wrong one), and a file can be cut off once: its
first GET announces the whole length, sends `drop_after` bytes and closes the connection (a broken network),
later GETs serve it, from where a Range asks. A file can also be held: a GET sends `hold_after` bytes and waits
until the test sets `server.release` (a slow download, to cancel in the middle). Unknown repositories and
revisions get the hub's 404s. Every request is recorded (method, path, Range, Authorization) so tests can check
what the client did.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

API = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)(?:/revision/(?P<rev>[^/]+))?$")
RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
CDN = re.compile(r"^/cdn/(?P<repo>[^/]+/[^/]+)/(?P<sha>[0-9a-f]{64})/(?P<file>.+)$")
LFS_SUFFIXES = (".safetensors", ".bin")


@dataclass
class Repo:
    files: dict[str, bytes]
    sha: str = ""
    token: str | None = None  # the bearer token it needs (a gated or private model), or None: public
    private: bool = False  # without a token: 401 with no error code (the hub's answer for private and unknown)
    no_access: tuple[str, ...] = ()  # valid tokens of users who have not accepted a gated model's terms: 403
    drop_after: dict[str, int] = field(default_factory=dict)  # file → bytes sent before its first GET is cut off
    hold_after: dict[str, int] = field(default_factory=dict)  # file → bytes sent before a GET waits for `release`

    def __post_init__(self) -> None:
        if not self.sha:
            digest = hashlib.sha1()
            for name in sorted(self.files):
                digest.update(name.encode() + hashlib.sha256(self.files[name]).digest())
            self.sha = digest.hexdigest()


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    range: str | None
    authorization: str | None


def folder_files(folder: Path) -> dict[str, bytes]:
    """A folder's top-level files (a saved Hugging Face model) as a repository's files."""
    return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir()) if p.is_file()}


class HubServer:
    """The server on 127.0.0.1 and a free port, on a thread of its own; `repos` may change while it runs."""

    def __init__(self, repos: dict[str, Repo] | None = None) -> None:
        self.repos: dict[str, Repo] = dict(repos or {})
        self.requests: list[Request] = []
        self._dropped: set[tuple[str, str]] = set()
        self.release = threading.Event()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="hub-server", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> HubServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def add(self, repo_id: str, repo: Repo) -> Repo:
        self.repos[repo_id] = repo
        return repo

    def gets(self, file: str) -> list[Request]:
        return [r for r in self.requests if r.method == "GET" and r.path.endswith("/" + file)]

    def take_drop(self, repo_id: str, file: str) -> int | None:
        """The bytes to send before cutting this GET off: only the first GET of a file set to drop."""
        limit = self.repos[repo_id].drop_after.get(file)
        with self._lock:
            if limit is None or (repo_id, file) in self._dropped:
                return None
            self._dropped.add((repo_id, file))
        return limit

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:  # noqa: N802 (http.server's name)
                self.answer(body=False)

            def do_GET(self) -> None:  # noqa: N802
                self.answer(body=True)

            def answer(self, body: bool) -> None:
                path = unquote(urlsplit(self.path).path)
                server.requests.append(Request(self.command, path, self.headers.get("Range"),
                                               self.headers.get("Authorization")))
                if match := API.match(path):
                    self.model_info(match["repo"], match["rev"] or "main", body)
                elif match := RESOLVE.match(path):
                    self.resolve(match["repo"], match["rev"], match["file"], body)
                elif match := CDN.match(path):
                    self.cdn(match["repo"], match["sha"], match["file"], body)
                else:
                    self.error(404, "EntryNotFound", f"{path} is not part of this test hub")

            def repo(self, repo_id: str, rev: str) -> Repo | None:
                repo = server.repos.get(repo_id)
                if repo is None:
                    self.error(404, "RepoNotFound", "Repository not found")
                    return None
                if repo.token is not None:
                    given = self.headers.get("Authorization")
                    if given is None and repo.private:
                        self.error(401, None, "Invalid username or password.")
                        return None
                    if given is None:
                        self.error(401, "GatedRepo", f"Access to model {repo_id} is restricted. You must have access "
                                                     "to it and be authenticated to access it. Please log in.")
                        return None
                    if given.removeprefix("Bearer ") in repo.no_access:
                        self.error(403, "GatedRepo", f"Access to model {repo_id} is restricted and you are not in "
                                                     "the authorized list.")
                        return None
                    if given != f"Bearer {repo.token}":
                        self.error(401, None, "Invalid credentials in Authorization header")
                        return None
                if rev not in ("main", repo.sha):
                    self.error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
                    return None
                return repo

            def model_info(self, repo_id: str, rev: str, body: bool) -> None:
                repo = self.repo(repo_id, rev)
                if repo is None:
                    return
                siblings = [{"rfilename": name, "size": len(data), "blobId": hashlib.sha1(data).hexdigest()}
                            for name, data in sorted(repo.files.items())]
                info = {"id": repo_id, "modelId": repo_id, "sha": repo.sha, "private": False,
                        "gated": "manual" if repo.token else False, "siblings": siblings}
                self.send_bytes(200, json.dumps(info).encode(), "application/json", {}, body)

            def resolve(self, repo_id: str, rev: str, file: str, body: bool) -> None:
                repo = self.repo(repo_id, rev)
                if repo is None:
                    return
                data = repo.files.get(file)
                if data is None:
                    self.error(404, "EntryNotFound", f"{file} does not exist in {repo_id}")
                    return
                digest = hashlib.sha256(data).hexdigest()
                if file.endswith(LFS_SUFFIXES):
                    headers = {"Location": f"{server.url}/cdn/{repo_id}/{digest}/{file}", "X-Repo-Commit": repo.sha,
                               "X-Linked-Etag": f'"{digest}"', "X-Linked-Size": str(len(data))}
                    self.send_bytes(302, b"", "text/plain", headers, body)
                    return
                headers = {"ETag": f'"{digest}"', "X-Repo-Commit": repo.sha}
                self.serve(repo_id, repo, file, data, headers, body)

            def cdn(self, repo_id: str, digest: str, file: str, body: bool) -> None:
                repo = server.repos.get(repo_id)
                data = repo.files.get(file) if repo is not None else None
                if data is None or hashlib.sha256(data).hexdigest() != digest:
                    self.error(404, None, "no such object")
                    return
                self.serve(repo_id, repo, file, data, {"ETag": f'"{digest}"'}, body)

            def serve(self, repo_id: str, repo: Repo, file: str, data: bytes, headers: dict, body: bool) -> None:
                headers = headers | {"Accept-Ranges": "bytes"}
                start = self.range_start()
                if start and body:
                    headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
                    self.send_bytes(206, data[start:], "application/octet-stream", headers, body)
                    return
                cut = server.take_drop(repo_id, file) if body else None
                hold = repo.hold_after.get(file) if body and not server.release.is_set() else None
                self.send_bytes(200, data, "application/octet-stream", headers, body, cut_after=cut, hold_after=hold)

            def range_start(self) -> int:
                match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
                return int(match[1]) if match else 0

            def error(self, status: int, code: str | None, message: str) -> None:
                headers = {"X-Error-Message": message}
                if code:
                    headers["X-Error-Code"] = code
                self.send_bytes(status, json.dumps({"error": message}).encode(), "application/json", headers,
                                self.command != "HEAD")

            def send_bytes(self, status: int, data: bytes, kind: str, headers: dict, body: bool,
                           cut_after: int | None = None, hold_after: int | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if not body:
                    return
                try:
                    if hold_after is not None:
                        self.wfile.write(data[:hold_after])
                        self.wfile.flush()
                        server.release.wait(60)
                        data = data[hold_after:]
                    if cut_after is None:
                        self.wfile.write(data)
                        return
                    self.wfile.write(data[:cut_after])  # then the connection breaks
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):  # the client went away (a cancelled download)
                    pass
                self.close_connection = True

        return Handler
