"""Models from the Hugging Face hub, downloaded as data, never as code (run in the export worker's process).

Which files: the top-level config, tokenizer, chat template and safetensors weights of one commit (the revision
asked for, pinned to its sha for every file). Never Python files (no trust_remote_code anywhere), never a config
that needs its own code. A repository with only pickled PyTorch weights (`pytorch_model*.bin`: unpickling can run
code) is refused, unless the user allowed it: then they are read with torch's `weights_only` loader and written
out as safetensors before anything else reads them.

The download goes into a folder of its own that outlives a failed or cancelled preparation, so a broken
connection, a Cancel or a lost network resumes where it stopped (huggingface_hub keeps a `.incomplete` file and
asks for the rest with a Range request); progress is reported in bytes. The token is huggingface_hub's own
(HF_TOKEN in the environment, else its token store); this module never writes it anywhere.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TOKEN_PAGE = "https://huggingface.co/settings/tokens"
DEFAULT_ENDPOINT = "https://huggingface.co"
METADATA = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "chat_template.json",
    "*.jinja",
)
SAFE_WEIGHTS = ("model*.safetensors", "model.safetensors.index.json")
ANY_SAFETENSORS = ("*.safetensors",)
PICKLED_WEIGHTS = ("pytorch_model*.bin", "pytorch_model.bin.index.json")
ATTEMPTS_WITHOUT_PROGRESS = 5  # a file whose connection keeps breaking with no new bytes is given up
PROGRESS_EVERY_S = 0.25
# huggingface_hub writes what arrives in chunks of this size (its default, 10 MB, would make a connection broken
# within the first 10 MB resume from 0, and the progress bar move in 10 MB steps)
CHUNK_BYTES = 1 << 16

# report(done_bytes, total_bytes, file_name)
BytesReport = Callable[[int, int, str], None]


class HubRefusal(ValueError):
    """A repository Branchpoint does not download as it is; the message says why and what would work."""


class PickledWeightsOnly(HubRefusal):
    """Only pickled weights: refused unless the user allows reading them with torch's weights_only loader."""


@dataclass(frozen=True)
class HubFile:
    name: str
    size: int


def endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")


def download_folder(root: Path, repo_id: str, revision: str | None) -> Path:
    """Where a repository's files are downloaded (kept until its preparation succeeds, for resuming)."""
    revision = (revision or "main").replace("/", "--")  # a branch like refs/pr/1 is one folder
    return root / "downloads" / "hub" / f"{repo_id.replace('/', '--')}@{revision}"


def matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def choose_files(repo_id: str, siblings: list[HubFile], allow_pickled: bool = False) -> list[HubFile]:
    """The files to download from a repository's listing; HubRefusal when it has nothing Branchpoint may read."""
    top = [f for f in siblings if "/" not in f.name]
    names = [f.name for f in top]
    if "config.json" not in names:
        raise HubRefusal(f"{repo_id} has no config.json at its top level: it is not a transformers model "
                         f"repository (files: {shorten(names)})")
    weights = [f for f in top if matches(f.name, SAFE_WEIGHTS)] or [f for f in top if matches(f.name, ANY_SAFETENSORS)]
    if not weights:
        weights = [f for f in top if matches(f.name, PICKLED_WEIGHTS)]
        if not any(f.name.endswith(".bin") for f in weights):
            ggufs = [n for n in names if n.endswith(".gguf")]
            hint = f"; it has GGUF files ({shorten(ggufs)}): download one and add it as a GGUF file" if ggufs else ""
            raise HubRefusal(f"{repo_id} has no safetensors weights at its top level{hint}")
        if not allow_pickled:
            raise PickledWeightsOnly(
                f"{repo_id} has only pickled PyTorch weights ({shorten([f.name for f in weights])}), no safetensors. "
                "Unpickling a file can run code, so Branchpoint reads only safetensors by default. Allow it "
                "(--allow-pickled-weights) to read them with torch's weights_only loader, which refuses anything "
                "but tensors")
    return [f for f in top if matches(f.name, METADATA)] + weights


def shorten(names: list[str], most: int = 6) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "") if names else "none"


def check_config(repo_id: str, config_path: Path) -> None:
    """Refuse a model that needs its own Python code (an auto_map to a class transformers does not have)."""
    import json

    from transformers import CONFIG_MAPPING

    config = json.loads(config_path.read_text(encoding="utf-8"))
    model_type = config.get("model_type")
    if model_type not in CONFIG_MAPPING:
        needs_code = " and needs its own Python code (auto_map)" if config.get("auto_map") else ""
        raise HubRefusal(f"{repo_id} is a {model_type!r} model{needs_code}, which transformers does not know; "
                         "Branchpoint never runs a repository's code (no trust_remote_code)")


def check_free_space(folder: Path, needed: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise HubRefusal(f"not enough disk space: the download needs {megabytes(needed)}, {megabytes(free)} are "
                         f"free in {folder}")


def megabytes(count: int) -> str:
    return f"{count / 1e6:,.1f} MB"


def bytes_line(done: int, total: int, name: str) -> str:
    return f"{name}: {megabytes(done)} of {megabytes(total)}"


def download(
    repo_id: str,
    revision: str | None,
    dest: Path,
    report: BytesReport,
    *,
    allow_pickled: bool = False,
) -> dict:
    """Download the repository's files into dest (resuming what an earlier try left there); returns the source
    record of the manifest: model id, revision asked for, commit, files and sizes (never the token)."""
    from huggingface_hub import HfApi, constants

    constants.DOWNLOAD_CHUNK_SIZE = CHUNK_BYTES
    info = HfApi(endpoint=endpoint()).model_info(repo_id, revision=revision, files_metadata=True)
    siblings = [HubFile(s.rfilename, s.size or 0) for s in info.siblings or []]
    files = choose_files(repo_id, siblings, allow_pickled)
    total = sum(f.size for f in files)
    check_free_space(dest, total - sum(present_size(dest, f) for f in files))
    done = 0
    for file in sorted(files, key=lambda f: f.name != "config.json"):  # config first: refuse custom code early
        fetch_file(repo_id, info.sha, file, dest,
                   lambda got, before=done, name=file.name: report(before + got, total, name))
        done += file.size
        report(done, total, file.name)
        if file.name == "config.json":
            check_config(repo_id, dest / "config.json")
    if allow_pickled and not any(matches(f.name, ANY_SAFETENSORS) for f in files):
        convert_pickled_weights(dest)
    return {"kind": "hub", "model_id": repo_id, "revision": revision or "main", "commit": info.sha,
            "endpoint": endpoint(), "files": {f.name: f.size for f in files},
            "weights": "pickled, read with weights_only" if allow_pickled else "safetensors"}


def present_size(dest: Path, file: HubFile) -> int:
    path = dest / file.name
    return file.size if path.is_file() and path.stat().st_size == file.size else 0


def partial_bytes(dest: Path) -> int:
    """Bytes of the file being downloaded (huggingface_hub's .incomplete file in the local folder's cache)."""
    return sum(p.stat().st_size for p in (dest / ".cache" / "huggingface").rglob("*.incomplete") if p.is_file())


def fetch_file(repo_id: str, commit: str, file: HubFile, dest: Path, report: Callable[[int], None]) -> None:
    """One file, its bytes reported as they arrive; a broken connection is resumed from the bytes already there,
    given up after ATTEMPTS_WITHOUT_PROGRESS tries that brought nothing new."""
    import requests
    from huggingface_hub import hf_hub_download

    stalled, best = 0, -1
    while True:
        stop = threading.Event()
        watcher = threading.Thread(target=watch_partial, args=(dest, report, stop), daemon=True)
        watcher.start()
        try:
            hf_hub_download(repo_id, file.name, revision=commit, local_dir=dest, endpoint=endpoint())
            return
        except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError, requests.Timeout):
            got = partial_bytes(dest)
            stalled = 0 if got > best else stalled + 1
            best = max(best, got)
            if stalled >= ATTEMPTS_WITHOUT_PROGRESS:
                raise
            time.sleep(0.5)
        finally:
            stop.set()
            watcher.join()


def watch_partial(dest: Path, report: Callable[[int], None], stop: threading.Event) -> None:
    while not stop.wait(PROGRESS_EVERY_S):
        try:
            report(partial_bytes(dest))
        except OSError:  # the .incomplete file was just renamed into place
            pass


def convert_pickled_weights(dest: Path) -> None:
    """pytorch_model*.bin → model*.safetensors with torch's weights_only loader (tensors only, no code); the
    pickles are removed so that nothing later unpickles them."""
    import json

    import torch
    from safetensors.torch import save_file

    index = dest / "pytorch_model.bin.index.json"
    renamed = {}
    for path in sorted(dest.glob("pytorch_model*.bin")):
        state = torch.load(path, map_location="cpu", weights_only=True)
        target = path.name.replace("pytorch_model", "model").replace(".bin", ".safetensors")
        save_file({k: v.contiguous() for k, v in state.items()}, str(dest / target), metadata={"format": "pt"})
        renamed[path.name] = target
        path.unlink()
    if index.is_file():
        data = json.loads(index.read_text(encoding="utf-8"))
        data["weight_map"] = {k: renamed.get(v, v) for k, v in data.get("weight_map", {}).items()}
        (dest / "model.safetensors.index.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
        index.unlink()


def explain(exc: BaseException, repo_id: str, revision: str | None, token_given: bool) -> str:
    """A download failure in words: what happened and what to do."""
    from huggingface_hub import errors

    where = endpoint()
    token_hint = (f"a token is needed: make one at {TOKEN_PAGE} (read access), then put it in the token field or "
                  "HF_TOKEN, or run `hf auth login`")
    if isinstance(exc, HubRefusal):
        return str(exc)
    if isinstance(exc, errors.GatedRepoError):
        if token_given:
            return (f"{repo_id} is a gated model and this token has no access yet: accept its terms on "
                    f"{where}/{repo_id} while logged in, then try again")
        return f"{repo_id} is a gated model: accept its terms on {where}/{repo_id}; {token_hint}"
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, errors.HfHubHTTPError) and "Invalid credentials" in str(exc):
        return f"the hub refused the token (invalid credentials): make a new one at {TOKEN_PAGE}"
    if isinstance(exc, errors.RevisionNotFoundError):
        return f"{repo_id} has no revision {revision!r} (a branch, tag or commit sha)"
    if isinstance(exc, errors.RepositoryNotFoundError) or status in (401, 403):
        # the hub answers 401 alike for a private, a gated and an unknown repository when no token is sent
        if status in (401, 403) and not token_given:
            return f"no public model {repo_id!r} on the hub: check the id; if it is private or gated, {token_hint}"
        readable = " that this token can read" if token_given else ""
        return f"no model {repo_id!r} on the hub ({where}){readable}: check the id"
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return f"the disk is full ({exc.filename or 'while downloading'}): free some space and try again"
    if is_connection_error(exc):
        return (f"cannot reach the Hugging Face hub at {where} ({type(exc).__name__}): check the network "
                "connection; what was downloaded is kept and the next try resumes it")
    return f"{type(exc).__name__}: {exc}"


def is_connection_error(exc: BaseException) -> bool:
    import requests
    from huggingface_hub import errors

    kinds = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError,
             errors.LocalEntryNotFoundError, errors.OfflineModeIsEnabled)
    return isinstance(exc, kinds)
