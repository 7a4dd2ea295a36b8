"""Child process for the heavy part of preparation (torch, transformers, optimum): GGUF → HF → ONNX → edited
ONNX (models.graph_edits).

Running it in its own process lets the parent kill it promptly on Cancel / Ctrl-C and keeps torch out of the
app.
It reports progress as lines `@@bp {json}` on stdout: {"stage", "fraction", "message"} or {"stage", "error"}.

    python -m models.export_worker gguf --gguf FILE --hf-dir DIR --out DIR
    python -m models.export_worker hf --source DIR --out DIR
    python -m models.export_worker hub --source MODEL_ID [--revision R] [--allow-pickled-weights] --hf-dir DIR --out DIR
    python -m models.export_worker inspection --gguf FILE | --source HF_DIR --out DIR   (models.inspection)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import traceback
from pathlib import Path

MARK = "@@bp "
EXPORT_TASK = "text-generation-with-past"
INSPECTION_CHECK_NAME = "inspection_check.json"  # read (and removed) by models.inspection
HUB_SOURCE_NAME = "hub_source.json"  # read (and removed) by models.prepare


current_stage = "start"  # named in the error report if something fails


def emit(**payload) -> None:
    global current_stage
    current_stage = payload["stage"]
    sys.stdout.write(MARK + json.dumps(payload) + "\n")
    sys.stdout.flush()


def dequantize_gguf(gguf: Path, hf_dir: Path) -> None:
    """Load the GGUF with transformers (dequantized to fp32); save an HF folder with a repaired tokenizer."""
    emit(stage="dequantize", fraction=0.0, message="loading torch and transformers")
    import torch
    from transformers import AutoModelForCausalLM

    emit(stage="dequantize", fraction=0.2, message=f"dequantizing {gguf.name} to float32")
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    emit(stage="dequantize", fraction=0.8, message="saving the float32 weights")
    model.save_pretrained(hf_dir)
    emit(stage="dequantize", fraction=1.0, message="dequantized")

    emit(stage="tokenizer", fraction=0.0, message="building the tokenizer from the GGUF's vocabulary")
    eos_ids, pad_id, how = save_gguf_tokenizer(gguf, hf_dir, model.config.max_position_embeddings)
    write_generation_config(model, eos_ids, pad_id, hf_dir)
    (hf_dir / TOKENIZER_NOTE).write_text(json.dumps({"tokenizer": how}), encoding="utf-8")
    emit(stage="tokenizer", fraction=1.0, message=how)


TOKENIZER_NOTE = "branchpoint_tokenizer.json"  # how the tokenizer was made: read into the manifest by preparation
TURN_END = "<end_of_turn>"  # Gemma's chat turns end here: an eos besides <eos> (as Google's generation_config)


def save_gguf_tokenizer(gguf: Path, hf_dir: Path, max_length: int) -> tuple[list[int], int, str]:
    """The GGUF's tokenizer into hf_dir, as llama.cpp reads it: SentencePiece-style vocabularies built by
    models.gguf_tokenizer, SmolLM2's byte-level BPE repaired (models.tokenizer_repair), other byte-level BPE
    vocabularies as transformers converts them. Returns (eos ids, pad id, how it was made)."""
    from transformers import AutoTokenizer

    from models.gguf_tokenizer import read_vocabulary, write_spm_tokenizer

    vocabulary = read_vocabulary(gguf)
    if vocabulary.model == "llama":
        write_spm_tokenizer(vocabulary, hf_dir, max_length)
        eos = [vocabulary.eos_id] + [
            i for i, p in enumerate(vocabulary.pieces) if p == TURN_END and i != vocabulary.eos_id
        ]
        pad = vocabulary.pad_id if vocabulary.pad_id is not None else eos[0]
        how = "SentencePiece-style GGUF vocabulary (models.gguf_tokenizer: user-defined pieces first, BPE by score)"
        return eos, pad, how
    broken = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if vocabulary.pre == "smollm":
        from models.tokenizer_repair import EOS_TOKEN, repair_gguf_tokenizer

        fixed = repair_gguf_tokenizer(broken, broken.chat_template, max_length)
        fixed.save_pretrained(hf_dir)
        eos_id = fixed.convert_tokens_to_ids(EOS_TOKEN)
        return [eos_id], eos_id, "SmolLM2 byte-level BPE, repaired (models.tokenizer_repair)"
    broken.clean_up_tokenization_spaces = False
    broken.save_pretrained(hf_dir)
    eos = [vocabulary.eos_id] if vocabulary.eos_id is not None else [broken.eos_token_id]
    pad = vocabulary.pad_id if vocabulary.pad_id is not None else eos[0]
    return eos, pad, f"transformers' GGUF conversion ({vocabulary.model}, pre-tokenizer {vocabulary.pre}), not checked"


def write_generation_config(model, eos_ids: list[int], pad_id: int, hf_dir: Path) -> None:
    from transformers import GenerationConfig

    bos_id = model.config.bos_token_id
    eos = eos_ids[0] if len(eos_ids) == 1 else eos_ids
    model.config.eos_token_id = eos
    model.config.pad_token_id = pad_id
    model.config.save_pretrained(hf_dir)
    GenerationConfig(bos_token_id=bos_id, eos_token_id=eos, pad_token_id=pad_id).save_pretrained(hf_dir)


def download_from_hub(args: argparse.Namespace) -> None:
    """The repository's files into --hf-dir (models.hub: safetensors only unless allowed, resumed, in bytes); its
    source record is left in HUB_SOURCE_NAME. A failure is reported in words, a pickled-only repository with the
    refusal "pickled-weights" (the parent may ask the user to allow it)."""
    from models import hub

    emit(stage="download", fraction=0.0, message=f"asking {hub.endpoint()} for {args.source}")

    def report(done: int, total: int, name: str) -> None:
        emit(stage="download", fraction=done / max(total, 1), message=hub.bytes_line(done, total, name),
             bytes=[done, total])

    try:
        source = hub.download(args.source, args.revision, args.hf_dir, report, allow_pickled=args.allow_pickled_weights)
    except Exception as exc:
        traceback.print_exc()
        refusal = "pickled-weights" if isinstance(exc, hub.PickledWeightsOnly) else None
        emit(stage="download", error=hub.explain(exc, args.source, args.revision, bool(os.environ.get("HF_TOKEN"))),
             refusal=refusal)
        raise Reported from exc
    (args.out / HUB_SOURCE_NAME).write_text(json.dumps(source), encoding="utf-8")
    emit(stage="download", fraction=1.0, message=f"downloaded {hub.megabytes(sum(source['files'].values()))}")


class Reported(Exception):
    """A failure already reported to the parent in words."""


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", TOKENIZER_NOTE)


def export_onnx(hf_dir: Path, out: Path) -> None:
    emit(stage="export", fraction=0.0, message="exporting to ONNX with optimum (text-generation-with-past)")
    from optimum.exporters.onnx import main_export

    main_export(str(hf_dir), output=str(out), task=EXPORT_TASK, device="cpu", do_validation=False)
    for name in TOKENIZER_FILES:  # as made, not as transformers re-serialises them
        if (hf_dir / name).is_file():
            shutil.copyfile(hf_dir / name, out / name)
    if not (out / "tokenizer.json").is_file():
        save_fast_tokenizer(hf_dir, out)
    emit(stage="export", fraction=1.0, message="exported")


def edit_graph(out: Path) -> None:
    """The graph edits of models.graph_edits that match the export; which ones is left in RECORD_NAME."""
    emit(stage="graph-edits", fraction=0.0, message="editing the ONNX graph (last-position lm_head, grouped attention)")
    from models.graph_edits import RECORD_NAME, edit_model_folder

    applied, skipped = edit_model_folder(out)
    (out / RECORD_NAME).write_text(json.dumps({"applied": applied, "skipped": skipped}), encoding="utf-8")
    emit(stage="graph-edits", fraction=1.0, message=f"applied: {', '.join(applied) or 'none'}")


def export_inspection_model(weights: Path, out: Path) -> None:
    """The inspection model (models.inspection_export) from a GGUF file or an HF folder, checked against
    transformers; the check's result is left in INSPECTION_CHECK_NAME."""
    emit(stage="load", fraction=0.0, message="loading the float32 weights with eager attention")
    from models.inspection_export import check, check_reference, export_inspection, load_eager_model
    from models.optimized_graph import save_optimized_graph

    model = load_eager_model(weights)
    token_ids, reference = check_reference(model)
    emit(stage="load", fraction=1.0, message="loaded")
    emit(stage="export", fraction=0.0, message="exporting the inspection model (attention, logit lens) with optimum")
    export_inspection(model, out)
    emit(stage="export", fraction=0.9, message="saving the graph as ONNX Runtime loads it fastest")
    save_optimized_graph(out)  # its session opens in 1.0-1.5 s instead of 1.9-2.3 s (2 busy cores)
    emit(stage="export", fraction=1.0, message="exported")
    emit(stage="check", fraction=0.0, message="comparing it with transformers")
    result = check(out / "model.onnx", token_ids, reference)
    (out / INSPECTION_CHECK_NAME).write_text(json.dumps(result), encoding="utf-8")
    emit(stage="check", fraction=1.0, message=f"largest attention difference {result['attention_max_abs_diff']:.1e}")


def save_fast_tokenizer(hf_dir: Path, out: Path) -> None:
    """The runtime reads tokenizer.json: convert a slow-only tokenizer (vocab.json + merges.txt) to it."""
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(hf_dir, use_fast=True).save_pretrained(out)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m models.export_worker")
    parser.add_argument("mode", choices=["gguf", "hf", "hub", "inspection"])
    parser.add_argument("--gguf", type=Path)
    parser.add_argument("--source")
    parser.add_argument("--hf-dir", type=Path)
    parser.add_argument("--revision")
    parser.add_argument("--allow-pickled-weights", action="store_true")
    parser.add_argument("--out", type=Path, required=True)
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    if args.mode == "gguf":
        dequantize_gguf(args.gguf, args.hf_dir)
        export_onnx(args.hf_dir, args.out)
        edit_graph(args.out)
    elif args.mode == "hub":
        download_from_hub(args)
        export_onnx(args.hf_dir, args.out)
        edit_graph(args.out)
    elif args.mode == "inspection":
        export_inspection_model(args.gguf or Path(args.source), args.out)
    else:
        export_onnx(Path(args.source), args.out)
        edit_graph(args.out)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        run(args)
    except Reported:
        return 1
    except Exception as exc:  # reported to the parent, which names the stage
        traceback.print_exc()
        emit(stage=current_stage, error=f"{type(exc).__name__}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown: freeing torch and the exported graph takes tens of seconds
