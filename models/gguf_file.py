"""What a GGUF file is, read from its header in a fraction of a second (no tensor data, no torch): name,
architecture, quantization, size, parameters, and whether Branchpoint can prepare it. A file that cannot be
prepared is refused here, before any work, in words: not a GGUF, truncated, an architecture transformers 4.57 does
not load from GGUF or optimum cannot export as a causal LM with a KV cache, or not a causal LM at all.

Layout (GGUF v2/v3, little-endian): magic "GGUF", version u32, tensor count u64, metadata count u64, metadata
(key string, value type u32, value), tensor infos (name, n_dims u32, dims u64 × n, type u32, offset u64), padding
to `general.alignment` (default 32), tensor data.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

MAGIC = b"GGUF"
# GGUF general.architecture values transformers 4.57 dequantizes (integrations/ggml.py) whose model type optimum-onnx
# 0.1.0 exports for text-generation-with-past; the comment names the architectures the test matrix runs.
SUPPORTED_ARCHITECTURES = (
    "llama",  # tested (tests/models/test_architecture_matrix.py); Mistral GGUFs too (llama.cpp writes them as llama)
    "mistral",  # tested (transformers' name for a llama GGUF named exactly "mistral")
    "qwen2",  # tested
    "qwen3",  # tested
    "phi3",  # tested
    "gemma3",  # tested, and the catalog's gemma-3-270m
    "gpt2",  # tested
    "gemma2",
    "stablelm",
    "falcon",
    "bloom",
    "nemotron",
)
NOT_CAUSAL = {
    "t5": "an encoder-decoder (T5)",
    "t5encoder": "a T5 encoder",
    "umt5": "an encoder-decoder (UMT5)",
    "bert": "an encoder (BERT)",
    "nomic-bert": "an embedding encoder",
    "clip": "an image encoder (CLIP)",
}
WHY_NOT = {
    "qwen2moe": "transformers loads it, but optimum-onnx 0.1.0 cannot export mixture-of-experts Qwen models",
    "qwen3moe": "transformers loads it, but optimum-onnx 0.1.0 cannot export mixture-of-experts Qwen models",
    "starcoder2": "transformers loads it, but optimum-onnx 0.1.0 has no ONNX export for StarCoder2",
    "mamba": "a state-space model without a KV cache (Branchpoint's runtime needs past_key_values)",
    "deci": "transformers loads it, but optimum-onnx 0.1.0 has no ONNX export for it",
    "lfm2": "transformers 4.57 loads its weights but has no tokenizer converter for it",
}
ARRAY = 9
STRING = 8
SCALAR_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
READ_SKIPPED = {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"}


class GgufRefused(ValueError):
    """This file cannot be prepared; the message says why and lists what can."""


def supported_list() -> str:
    return ", ".join(SUPPORTED_ARCHITECTURES)


@dataclass(frozen=True)
class GgufSummary:
    path: Path
    size_bytes: int
    version: int
    architecture: str
    name: str
    quantization: str  # general.file_type as llama.cpp names it ("Q4_K_M"), else the commonest tensor type
    parameters: int
    tensor_count: int
    context_length: int | None
    metadata: dict = field(default_factory=dict, repr=False, compare=False)  # scalars and short arrays
    tensor_types: dict = field(default_factory=dict, repr=False, compare=False)  # "Q4_K" → how many tensors

    @property
    def supported(self) -> bool:
        return self.model_architecture in SUPPORTED_ARCHITECTURES

    @property
    def model_architecture(self) -> str:
        """The architecture transformers loads it as. llama.cpp stores Mistral models as "llama"; transformers 4.57
        loads one as Mistral only when general.name is exactly "mistral" (it tests membership in the name's list),
        otherwise as Llama (the same layers; Mistral v0.1's 4,096-token sliding window is then not applied)."""
        if self.architecture == "llama" and self.metadata.get("general.name") == "mistral":
            return "mistral"
        return self.architecture


def read_summary(path: str | Path, vocabulary: bool = False) -> GgufSummary:
    """The header of a GGUF file; GgufRefused when it is not one or is truncated. `vocabulary`: its metadata also
    holds the tokenizer's arrays (tokens, scores, types, merges), else they are skipped."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise GgufRefused(f"{path} is not a file")
    size = path.stat().st_size
    try:
        with open(path, "rb") as f:
            return parse(f, path, size, set() if vocabulary else READ_SKIPPED)
    except (struct.error, UnicodeDecodeError, EOFError) as exc:
        raise GgufRefused(
            f"{path} is truncated or damaged: its GGUF header ends early or is unreadable ({exc})"
        ) from None


def check_preparable(path: str | Path) -> GgufSummary:
    """read_summary, then GgufRefused unless Branchpoint can prepare it (a supported causal-LM architecture)."""
    return check_summary(read_summary(path))


def check_summary(summary: GgufSummary) -> GgufSummary:
    """The summary back, or GgufRefused saying why Branchpoint cannot prepare that file."""
    architecture = summary.model_architecture
    if architecture in NOT_CAUSAL:
        raise GgufRefused(
            f"{summary.path.name} is {NOT_CAUSAL[architecture]}, not a causal language model; Branchpoint prepares "
            f"GGUF causal LMs of these architectures: {supported_list()}"
        )
    if architecture not in SUPPORTED_ARCHITECTURES:
        why = WHY_NOT.get(architecture, "transformers 4.57 cannot load it from GGUF, or optimum cannot export it")
        raise GgufRefused(
            f"{summary.path.name} has the architecture {architecture!r}: {why}. Branchpoint prepares GGUF causal LMs "
            f"of these architectures: {supported_list()}"
        )
    if "tokenizer.ggml.model" not in summary.metadata:
        raise GgufRefused(f"{summary.path.name} has no tokenizer (no tokenizer.ggml.model); it cannot be run alone")
    return summary


def parse(f: BinaryIO, path: Path, size: int, skipped: set[str]) -> GgufSummary:
    magic = f.read(4)
    if magic != MAGIC:
        raise GgufRefused(f"{path.name} is not a GGUF file (it starts with {magic!r}, not {MAGIC!r})")
    version, tensor_count, kv_count = struct.unpack("<IQQ", read_exact(f, 20))
    if version not in (2, 3):
        raise GgufRefused(f"{path.name} is GGUF version {version}; Branchpoint reads versions 2 and 3")
    metadata = {}
    for _ in range(kv_count):
        key = read_string(f)
        metadata[key] = read_value(f, struct.unpack("<I", read_exact(f, 4))[0], keep=key not in skipped)
    tensors = [read_tensor_info(f) for _ in range(tensor_count)]
    alignment = int(metadata.get("general.alignment", 32))
    data_start = -(-f.tell() // alignment) * alignment
    end, parameters, types, counts = data_start, 0, {}, {}
    for _name, dims, kind, offset in tensors:
        count = 1
        for d in dims:
            count *= d
        parameters += count
        types[kind] = types.get(kind, 0) + count
        counts[type_name(kind)] = counts.get(type_name(kind), 0) + 1
        end = max(end, data_start + offset + tensor_bytes(kind, count))
    if end > size:
        raise GgufRefused(
            f"{path.name} is truncated: its tensors end at byte {end:,} but the file has {size:,} bytes (an "
            "interrupted download?)"
        )
    architecture = str(metadata.get("general.architecture", ""))
    return GgufSummary(
        path=path,
        size_bytes=size,
        version=version,
        architecture=architecture,
        name=str(metadata.get("general.name") or path.stem),
        quantization=quantization_name(metadata.get("general.file_type"), types),
        parameters=parameters,
        tensor_count=tensor_count,
        context_length=metadata.get(f"{architecture}.context_length"),
        metadata=metadata,
        tensor_types=counts,
    )


def read_exact(f: BinaryIO, count: int) -> bytes:
    data = f.read(count)
    if len(data) != count:
        raise EOFError(f"wanted {count} bytes at offset {f.tell() - len(data)}, got {len(data)}")
    return data


def read_string(f: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", read_exact(f, 8))
    if length > 1 << 30:
        raise EOFError(f"a string of {length} bytes")
    return read_exact(f, length).decode("utf-8")


def read_value(f: BinaryIO, kind: int, keep: bool = True):
    if kind == STRING:
        return read_string(f)
    if kind == ARRAY:
        item_kind, count = struct.unpack("<IQ", read_exact(f, 12))
        if item_kind in SCALAR_FORMATS:  # skipped in one read (or one seek when not kept)
            width = struct.calcsize(SCALAR_FORMATS[item_kind])
            if not keep:
                f.seek(width * count, 1)
                return None
            return list(struct.unpack(f"<{count}{SCALAR_FORMATS[item_kind]}", read_exact(f, width * count)))
        values = [read_value(f, item_kind, keep) for _ in range(count)]
        return values if keep else None
    if kind not in SCALAR_FORMATS:
        raise EOFError(f"unknown metadata value type {kind}")
    fmt = "<" + SCALAR_FORMATS[kind]
    return struct.unpack(fmt, read_exact(f, struct.calcsize(fmt)))[0]


def read_tensor_info(f: BinaryIO) -> tuple[str, list[int], int, int]:
    name = read_string(f)
    (n_dims,) = struct.unpack("<I", read_exact(f, 4))
    dims = list(struct.unpack(f"<{n_dims}Q", read_exact(f, 8 * n_dims)))
    kind, offset = struct.unpack("<IQ", read_exact(f, 12))
    return name, dims, kind, offset


def tensor_bytes(kind: int, count: int) -> int:
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    try:
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
    except (ValueError, KeyError):
        raise EOFError(f"unknown tensor type {kind}") from None
    return count // block * size


def quantization_name(file_type, types: dict[int, int]) -> str:
    from gguf import LlamaFileType

    if file_type is not None:
        try:
            return LlamaFileType(int(file_type)).name.removeprefix("MOSTLY_")
        except ValueError:
            pass
    if not types:
        return "unknown"
    return type_name(max(types, key=types.get))


def type_name(kind: int) -> str:
    """A GGML tensor type's name ("Q4_K"), or "type N" for one gguf-py does not know."""
    from gguf import GGMLQuantizationType

    try:
        return GGMLQuantizationType(kind).name
    except ValueError:
        return f"type {kind}"
