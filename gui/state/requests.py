"""What the next run is asked to do, held once in the run state (gui.state.run_state): the prompt, its chat
template and system prompt, max new tokens, the run's base seed, the strategy branches continue with and the
device. The prompt panel, the branch-strategy box, the settings and the controller read and write this one
request; `request_of` is the request a saved run was made with."""

from __future__ import annotations

from dataclasses import dataclass, replace

from decoding.records.trace import RunTrace

DEFAULT_PROMPT = "Although I was tired, I still decided to"
DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class RunRequest:
    text: str = DEFAULT_PROMPT
    chat: bool = False
    system: str | None = None
    max_new_tokens: int = 64
    seed: int | None = None  # run-level base seed for sampled lanes left at seed 'auto'
    branch_strategy: str = ""  # a decoding.chain.spec.PRESETS title new branch lanes continue with ("": the parent's)
    device: str = "auto"  # where the model runs: "auto", "cpu" or "cuda"

    def with_prompt_of(self, other: RunRequest) -> RunRequest:
        """This request's branch strategy and device, `other`'s prompt and run settings."""
        return replace(other, branch_strategy=self.branch_strategy, device=self.device)


def request_of(trace: RunTrace) -> RunRequest:
    prompt = trace.prompt
    return RunRequest(prompt.text, prompt.chat, prompt.system, trace.settings.max_new_tokens, trace.settings.seed)
