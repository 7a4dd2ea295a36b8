"""Which model a run or an explained sequence came from (recorded in run files and explain files)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ModelInfo:
    name: str
    hashes: dict[str, str] = field(default_factory=dict)  # from the model's manifest (file -> sha256)
    path: str | None = None  # where it was loaded from (informative; replay resolves by name or path)
    # a served model (runtime.served): protocol, url, model, vocab_size, alternatives (top-N it returns per step;
    # equal to vocab_size: complete) and what the server reported about itself; None (not written): a local model.
    # Never a secret: an API key comes from an environment variable and is not recorded.
    served: dict | None = None


@dataclass
class LaneModelInfo(ModelInfo):
    """The model a lane that names its own (LaneSpec.model) ran on; a lane on the run's model records none, unless
    the run's model is served: each lane then records it (what its top-N returned is the lane's to mark)."""

    precision: str | None = None  # "fp32", "fp16", "int8", "int4", "q4_1" (models.variants.precision_of)
    # its tokenizer's identity (tokenizer.json's sha256) when it is not the run's: the lane is compared with lanes
    # of another tokenizer by text, not token by token; None (not written): the run's tokenizer
    tokenizer: str | None = None
