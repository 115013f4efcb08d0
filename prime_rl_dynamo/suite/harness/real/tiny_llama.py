"""A tiny Llama with random weights, built locally (no hub): ``python -m ... OUT [--seed N]``.

Runs in the real-engine virtualenv (transformers, tokenizers and torch are vLLM's dependencies,
not the package's). transformers' ``LlamaConfig`` with hidden size 128, 2 layers and 2 heads, a
word-level tokenizer over a small fixed vocabulary, saved in bf16: about 1 MB. Two seeds give
two checkpoints of one architecture, so a reload from a path visibly changes what is generated.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

#: Words of the tokenizer's vocabulary (after the special tokens); prompts use only these.
WORDS = tuple(f"w{i}" for i in range(248))
SPECIAL = ("<unk>", "<s>", "</s>", "<pad>")
#: A prompt whose greedy continuation the tests compare between checkpoints.
PROMPT = " ".join(WORDS[:8])


def build(out: Path, seed: int) -> None:
    """Write config, weights and tokenizer of the tiny Llama seeded ``seed`` to ``out``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate((*SPECIAL, *WORDS))}
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=vocab["<s>"],
        eos_token_id=vocab["</s>"],
        pad_token_id=vocab["<pad>"],
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
    )
    # A chat template, so chat requests through the frontend render too.
    tokenizer.chat_template = "{% for message in messages %}{{ message['content'] }} {% endfor %}"
    tokenizer.save_pretrained(out)
    (out / "tiny_llama.json").write_text(json.dumps({"seed": seed, "prompt": PROMPT}))


def main(argv: list[str] | None = None) -> int:
    """Entry point: build the checkpoint named on the command line."""
    parser = argparse.ArgumentParser(prog="python -m prime_rl_dynamo.suite.harness.real.tiny_llama")
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    build(args.out, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
