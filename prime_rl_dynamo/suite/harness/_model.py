"""A tiny model directory made locally, for the runtime's own model registration (no download).

``register_model`` reads a Hugging Face style directory: ``config.json`` and tokenizer files. The
harness writes one per model name into the fleet's directory: a word-level tokenizer of a handful
of tokens and a two-layer Llama-shaped config. No weights: the stubs never generate.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

__all__ = ["write_model_dir"]

_SPECIAL = ("<unk>", "<s>", "</s>")
_WORDS = ("hello", "world", "rl", "weights", "update")
_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}"
)


def _tokenizer() -> dict[str, object]:
    vocab = {token: index for index, token in enumerate((*_SPECIAL, *_WORDS))}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": vocab[token],
                "content": token,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for token in _SPECIAL
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
    }


def _config() -> dict[str, object]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": len(_SPECIAL) + len(_WORDS),
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "max_position_embeddings": 2048,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "torch_dtype": "float32",
    }


def write_model_dir(root: Path, name: str) -> Path:
    """Write (once) the tiny model directory for ``name`` under ``root``; returns its path."""
    digest = hashlib.blake2b(name.encode(), digest_size=6).hexdigest()
    directory = root / f"model-{digest}"
    if (directory / "config.json").exists():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "tokenizer.json": _tokenizer(),
        "tokenizer_config.json": {
            "bos_token": "<s>",
            "eos_token": "</s>",
            "unk_token": "<unk>",
            "model_max_length": 2048,
            "chat_template": _CHAT_TEMPLATE,
        },
        "generation_config.json": {"bos_token_id": 1, "eos_token_id": 2},
        "config.json": _config(),  # last: its presence means the directory is complete
    }
    for file, content in files.items():
        (directory / file).write_text(json.dumps(content, indent=1), encoding="utf-8")
    return directory
