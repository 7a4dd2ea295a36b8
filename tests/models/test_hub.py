"""`prepare --hub` against tests/hub_server.py's stand-in for the hub (huggingface_hub talking HTTP to
127.0.0.1): the download in bytes, resumed after a broken connection and after a Cancel, clear messages for an
unknown id or revision, a gated model, a refused token, no network and a full disk; safetensors only (pickled
weights refused, or read with weights_only when allowed), never a repository's code, and the token written
nowhere."""

from __future__ import annotations

import errno
import io
import json
import os
import pickle
import shutil
import threading
from pathlib import Path

import pytest

from models import catalog, hub, prepare
from models.errors import PickledWeightsRefused, PrepareCancelled, PrepareError
from tests.hub_server import Repo, folder_files

TOKEN = "hf_testTokenNeverWritten0123456789"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(root))
    return root


def leftovers(cache: Path) -> list[str]:
    models = cache / "models"
    return sorted(p.name for p in models.iterdir()) if models.is_dir() else []


def reference_greedy(hf_dir: Path, prompt_ids: list[int], count: int) -> list[int]:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32).eval()
    ids = torch.tensor([prompt_ids])
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=count, do_sample=False, eos_token_id=None)
    return out[0, ids.shape[1]:].tolist()


def files_containing(root: Path, needle: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_download_in_bytes_resumes_a_broken_connection_and_installs(cache, hub_server, tiny_hf_dir):
    files = folder_files(tiny_hf_dir) | {"modeling_evil.py": b"import os; os.system('touch pwned')",
                                         "onnx/model.onnx": b"not wanted"}
    weights = len(files["model.safetensors"])
    repo = hub_server.add("test-org/tiny-llama", Repo(files, drop_after={"model.safetensors": weights // 2}))
    seen: list[tuple[int, int]] = []
    path = prepare.prepare_hub("test-org/tiny-llama", on_bytes=lambda done, total: seen.append((done, total)))

    assert path == cache / "models" / "tiny-llama" and leftovers(cache) == ["tiny-llama"]
    manifest = catalog.read_manifest(path)
    wanted = {n: len(d) for n, d in files.items() if n.endswith((".json", ".jinja", ".safetensors"))}
    assert manifest["source"] == {"kind": "hub", "model_id": "test-org/tiny-llama", "revision": "main",
                                  "commit": repo.sha, "endpoint": hub_server.url, "files": wanted,
                                  "weights": "safetensors"}
    smoke = manifest["smoke_test"]
    assert smoke["generated_ids"] == reference_greedy(tiny_hf_dir, smoke["prompt_ids"], len(smoke["generated_ids"]))

    total = sum(wanted.values())
    assert {t for _, t in seen} == {total} and seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen), "bytes done never go back"
    gets = hub_server.gets("model.safetensors")
    assert len(gets) == 2 and gets[0].range is None
    resumed_from = int(gets[1].range.removeprefix("bytes=").rstrip("-"))
    assert 0 < resumed_from <= weights // 2, "the second request asks only for what the broken one did not bring"
    assert all(r.path.startswith(("/api/models/test-org/tiny-llama", f"/test-org/tiny-llama/resolve/{repo.sha}/",
                                  "/cdn/test-org/tiny-llama/")) for r in hub_server.requests), \
        "every file comes from the commit the listing named (the weights from where it sent them)"
    assert {r.path.split("/")[1] for r in gets} == {"cdn"}, "the weights came from the LFS redirect's address"
    assert not any(r.path.endswith((".py", ".onnx")) for r in hub_server.requests), "code and other files stay"
    assert not hub.download_folder(cache, "test-org/tiny-llama", None).exists(), "the download is dropped once used"


def test_cancel_mid_download_keeps_the_bytes_and_the_next_try_resumes(cache, hub_server, tiny_hf_dir):
    files = folder_files(tiny_hf_dir)
    weights = len(files["model.safetensors"])
    hub_server.add("test-org/slow", Repo(files, hold_after={"model.safetensors": weights // 2}))
    cancel = threading.Event()

    def on_bytes(done: int, total: int) -> None:
        if done >= weights // 4:
            cancel.set()

    with pytest.raises(PrepareCancelled) as info:
        prepare.prepare_hub("test-org/slow", on_bytes=on_bytes, cancel=cancel)
    assert info.value.stage == "download"
    assert leftovers(cache) == [], "no half-made model"
    assert hub.partial_bytes(hub.download_folder(cache, "test-org/slow", None)) > 0, "what came is kept"

    hub_server.release.set()
    prepare.prepare_hub("test-org/slow")
    retry = hub_server.gets("model.safetensors")[-1]
    assert retry.range is not None and int(retry.range.removeprefix("bytes=").rstrip("-")) > 0


def test_gated_model_asks_for_a_token_which_is_used_and_written_nowhere(cache, hub_server, tiny_hf_dir, tmp_path):
    hub_server.add("test-org/gated", Repo(folder_files(tiny_hf_dir), token=TOKEN))
    with pytest.raises(PrepareError) as info:
        prepare.prepare_hub("test-org/gated")
    message = str(info.value)
    assert info.value.stage == "download" and "gated" in message
    assert "token is needed" in message and hub.TOKEN_PAGE in message

    with pytest.raises(PrepareError, match="the hub refused the token"):
        prepare.prepare_hub("test-org/gated", token="hf_wrong")

    path = prepare.prepare_hub("test-org/gated", token=TOKEN)
    assert catalog.manifest_is_valid(path)
    assert hub_server.gets("model.safetensors")[-1].authorization == f"Bearer {TOKEN}"
    assert files_containing(cache, TOKEN) == [], "not in the model, its manifest, the logs or the downloads"
    assert "HF_TOKEN" not in os.environ, "the token was for that download only"


def test_unknown_id_and_revision_and_bad_ids_say_so(cache, hub_server, tiny_hf_dir):
    hub_server.add("test-org/tiny-llama", Repo(folder_files(tiny_hf_dir)))
    with pytest.raises(PrepareError, match="no model 'test-org/nothing-here' on the hub .*: check the id"):
        prepare.prepare_hub("test-org/nothing-here")
    with pytest.raises(PrepareError, match="test-org/tiny-llama has no revision 'v9'"):
        prepare.prepare_hub("test-org/tiny-llama", revision="v9")
    for bad in ("", "a b", "org/name/extra", "../etc", "org/"):
        with pytest.raises(ValueError, match="--hub .* is not a Hugging Face model id"):
            prepare.prepare_hub(bad)
    assert leftovers(cache) == []


def test_no_network_says_the_hub_cannot_be_reached(cache, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens
    with pytest.raises(PrepareError) as info:
        prepare.prepare_hub("test-org/tiny-llama")
    assert info.value.stage == "download"
    assert "cannot reach the Hugging Face hub at http://127.0.0.1:9" in str(info.value)
    assert "check the network connection" in str(info.value)


def tiny_state_dict_pickle(hf_dir: Path) -> bytes:
    import torch
    from safetensors.torch import load_file

    buffer = io.BytesIO()
    torch.save(load_file(hf_dir / "model.safetensors"), buffer)
    return buffer.getvalue()


def test_pickled_weights_are_refused_unless_allowed_then_read_as_tensors_only(cache, hub_server, tiny_hf_dir):
    files = folder_files(tiny_hf_dir)
    files["pytorch_model.bin"] = tiny_state_dict_pickle(tiny_hf_dir)
    del files["model.safetensors"]
    hub_server.add("test-org/pickled", Repo(files))
    with pytest.raises(PickledWeightsRefused) as info:
        prepare.prepare_hub("test-org/pickled")
    assert "only pickled PyTorch weights (pytorch_model.bin)" in info.value.cause
    assert "weights_only" in info.value.cause and "--allow-pickled-weights" in info.value.cause
    assert hub_server.gets("pytorch_model.bin") == [], "nothing pickled is downloaded before the user agrees"

    path = prepare.prepare_hub("test-org/pickled", allow_pickled_weights=True)
    manifest = catalog.read_manifest(path)
    assert manifest["source"]["weights"] == "pickled, read with weights_only"
    smoke = manifest["smoke_test"]
    assert smoke["generated_ids"] == reference_greedy(tiny_hf_dir, smoke["prompt_ids"], len(smoke["generated_ids"]))


class RunsCode:
    def __reduce__(self):
        return (os.system, ("touch PICKLE_RAN",))


def test_a_pickle_that_would_run_code_is_refused_by_weights_only(cache, hub_server, tiny_hf_dir, tmp_path,
                                                                  monkeypatch):
    files = folder_files(tiny_hf_dir)
    del files["model.safetensors"]
    files["pytorch_model.bin"] = pickle.dumps({"model.embed_tokens.weight": RunsCode()})
    hub_server.add("test-org/evil", Repo(files))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PrepareError, match="Weights only load failed|Unsupported global"):
        prepare.prepare_hub("test-org/evil", allow_pickled_weights=True)
    assert not (tmp_path / "PICKLE_RAN").exists()
    assert not list(Path(prepare.__file__).parents[1].glob("PICKLE_RAN"))
    assert leftovers(cache) == []


def test_a_model_that_needs_its_own_code_is_refused(cache, hub_server, tiny_hf_dir):
    files = folder_files(tiny_hf_dir)
    config = json.loads(files["config.json"])
    config |= {"model_type": "evil_lm", "auto_map": {"AutoModelForCausalLM": "modeling_evil.EvilLM"}}
    files["config.json"] = json.dumps(config).encode()
    files["modeling_evil.py"] = b"import os\nos.system('touch CODE_RAN')\n"
    hub_server.add("test-org/custom-code", Repo(files))
    with pytest.raises(PrepareError, match="needs its own Python code .*never runs a repository's code"):
        prepare.prepare_hub("test-org/custom-code")
    assert not any(r.path.endswith(".py") for r in hub_server.requests)
    assert hub_server.gets("model.safetensors") == [], "refused before the weights are downloaded"


def test_repositories_without_usable_weights_or_config_are_refused(hub_server):
    listing = [hub.HubFile("config.json", 10), hub.HubFile("model-q4_k_m.gguf", 100)]
    with pytest.raises(hub.HubRefusal, match="no safetensors weights .* GGUF files .* add it as a GGUF file"):
        hub.choose_files("o/m", listing)
    with pytest.raises(hub.HubRefusal, match="has no config.json"):
        hub.choose_files("o/m", [hub.HubFile("model.safetensors", 10)])
    chosen = hub.choose_files("o/m", [hub.HubFile(n, 1) for n in (
        "config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
        "model.safetensors.index.json", "consolidated.safetensors", "pytorch_model.bin", "tokenizer.json",
        "original/params.json", "flax_model.msgpack", "README.md", "chat_template.jinja")])
    assert [f.name for f in chosen] == ["config.json", "tokenizer.json", "chat_template.jinja",
                                        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                        "model.safetensors.index.json"]


def test_a_full_disk_is_named_before_and_during_the_download(hub_server, tiny_hf_dir, tmp_path, monkeypatch):
    hub_server.add("test-org/tiny-llama", Repo(folder_files(tiny_hf_dir)))
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(hub.shutil, "disk_usage", lambda _path: usage._replace(free=1000))
    with pytest.raises(hub.HubRefusal, match=r"not enough disk space: the download needs 0\.\d MB, 0\.0 MB are free"):
        hub.download("test-org/tiny-llama", None, tmp_path / "dl", lambda *_: None)
    full = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x.incomplete"))
    assert hub.explain(full, "o/m", None, False) == f"the disk is full ({tmp_path / 'x.incomplete'}): free some " \
                                                    "space and try again"


def test_hostile_chat_template_from_a_hub_folder_renders_in_the_sandbox(tmp_path):
    import jinja2.sandbox

    from runtime.chat import ChatTemplate

    (tmp_path / "chat_template.jinja").write_text(
        "{{ cycler.__init__.__globals__.os.popen('touch TEMPLATE_RAN').read() }}", encoding="utf-8")
    template = ChatTemplate.from_model_dir(tmp_path)
    with pytest.raises(jinja2.exceptions.SecurityError):
        template.render([{"role": "user", "content": "hi"}])
    assert not Path("TEMPLATE_RAN").exists()
    assert not (tmp_path / "TEMPLATE_RAN").exists()
    assert isinstance(template._template.environment, jinja2.sandbox.ImmutableSandboxedEnvironment)


def test_private_and_not_yet_accepted_gated_models_say_what_is_missing(hub_server, tmp_path, monkeypatch):
    files = {"config.json": b'{"model_type": "llama"}', "model.safetensors": b"0" * 64}
    hub_server.add("test-org/private", Repo(files, token=TOKEN, private=True))
    hub_server.add("test-org/gated", Repo(files, token=TOKEN, no_access=("hf_notAccepted",)))

    def failure(repo_id: str, token: str | None) -> str:
        if token:
            monkeypatch.setenv("HF_TOKEN", token)
        else:
            monkeypatch.delenv("HF_TOKEN", raising=False)
        with pytest.raises(Exception) as info:
            hub.download(repo_id, None, tmp_path / repo_id.replace("/", "-"), lambda *_: None)
        return hub.explain(info.value, repo_id, None, token_given=bool(token))

    private = failure("test-org/private", None)
    assert private.startswith("no public model 'test-org/private' on the hub: check the id; if it is private or "
                              "gated, a token is needed: make one at https://huggingface.co/settings/tokens")
    assert failure("test-org/gated", "hf_notAccepted") == (
        f"test-org/gated is a gated model and this token has no access yet: accept its terms on {hub_server.url}/"
        "test-org/gated while logged in, then try again")
    assert hub_server.requests[-1].authorization == "Bearer hf_notAccepted"
