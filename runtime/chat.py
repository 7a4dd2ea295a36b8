"""The model's chat template (chat_template.jinja, or `chat_template` in tokenizer_config.json), rendered with
jinja2 in a sandbox the way transformers' `apply_chat_template` renders it."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

from runtime.model_files import read_json


def _raise_exception(message: str):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False) -> str:
    # transformers overrides jinja's tojson, which would HTML-escape
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


class ChatTemplate:
    """A compiled chat template plus the special token texts it may refer to (bos_token, eos_token, ...)."""

    def __init__(self, source: str, special_tokens: dict[str, str] | None = None):
        self.source = source
        self.special_tokens = dict(special_tokens or {})
        self._template = _environment().from_string(source)

    @classmethod
    def from_model_dir(cls, model_dir: str | Path, special_tokens: dict[str, str] | None = None) -> ChatTemplate | None:
        """The folder's template, or None when the model has none."""
        model_dir = Path(model_dir)
        path = model_dir / "chat_template.jinja"
        source = path.read_text(encoding="utf-8") if path.exists() else None
        source = source or read_json(model_dir / "tokenizer_config.json").get("chat_template")
        if isinstance(source, list):  # [{"name": "default", "template": ...}, ...]
            source = next((t["template"] for t in source if t.get("name") == "default"), None)
        return cls(source, special_tokens) if source else None

    def render(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """The prompt text for `messages` ([{"role": ..., "content": ...}]); template errors raise
        jinja2's TemplateError."""
        return self._template.render(
            messages=messages, add_generation_prompt=add_generation_prompt, **self.special_tokens
        )

    def render_prompt(self, user_text: str, system: str | None = None) -> str:
        """One user turn (after an optional system prompt), ready for the assistant's answer."""
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": user_text})
        return self.render(messages)
