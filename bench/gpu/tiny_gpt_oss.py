"""A tiny gpt-oss checkpoint built here (random weights, the real o200k_harmony vocabulary), for
checks that need vLLM and a GPU but not a 20B model.

    python bench/gpu/tiny_gpt_oss.py OUT_DIR

Writes ``config.json`` and ``model.safetensors`` (``GptOssForCausalLM``: 2 layers, hidden 256,
4 experts, head_dim 64 — the shapes vLLM's gpt-oss kernels take), ``generation_config.json`` with
gpt-oss's stop ids (``<|return|>``, ``<|endoftext|>``, ``<|call|>``: vLLM adds them to every
request's stop tokens), and a ``tokenizer.json`` converted from the vocabulary c1 ships
(``c1/data/o200k_base.tiktoken``) plus the harmony special tokens, so that the HF tokenizer and
:mod:`c1.harmony` give the same ids. Nothing is downloaded.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
"""The o200k split pattern (tiktoken's ``o200k_base``)."""
VOCAB_SIZE = 201088
FIRST_SPECIAL = 199998
STOP_IDS = [200002, 199999, 200012]  # <|return|>, <|endoftext|>, <|call|>, as gpt-oss's generation_config


def special_tokens() -> dict[str, int]:
    """Every id past the ordinary vocabulary, named as the harmony encoding names it."""
    from c1.tokens import harmony

    enc = harmony()[1]
    out = {}
    for i in range(FIRST_SPECIAL, VOCAB_SIZE):
        try:
            out[enc.decode([i])] = i
        except Exception:  # an id the encoding does not name
            out[f"<|reserved_{i}|>"] = i
    return out


def write_tokenizer(out: Path) -> None:
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = {}
    for line in (REPO / "c1" / "data" / "o200k_base.tiktoken").read_text().splitlines():
        if line.strip():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)

    class Converter(TikTokenConverter):
        @staticmethod
        def load_tiktoken_bpe(_path):  # the shipped file, without the tiktoken package
            return ranks

    specials = special_tokens()
    conv = Converter(vocab_file="o200k_base.tiktoken", pattern=O200K_PATTERN, extra_special_tokens=list(specials))
    tok = PreTrainedTokenizerFast(tokenizer_object=conv.converted(), eos_token="<|return|>", pad_token="<|endoftext|>",
                                  bos_token="<|startoftext|>")
    tok.save_pretrained(str(out))
    got = tok.convert_tokens_to_ids(["<|start|>", "<|call|>", "<|return|>"])
    if got != [200006, 200012, 200002]:
        raise SystemExit(f"tiny_gpt_oss: the converted tokenizer gives {got} for <|start|>, <|call|>, <|return|>")


def build(out: str | Path, seed: int = 0) -> Path:
    import torch
    from transformers import GptOssConfig, GptOssForCausalLM

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    config = GptOssConfig(
        hidden_size=256, intermediate_size=256, num_hidden_layers=2, num_local_experts=4, num_experts_per_tok=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=VOCAB_SIZE,
        layer_types=["sliding_attention", "full_attention"], sliding_window=128,
        tie_word_embeddings=False, eos_token_id=STOP_IDS, pad_token_id=199999, torch_dtype="bfloat16",
    )
    model = GptOssForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(str(out), safe_serialization=True)
    (out / "generation_config.json").write_text(json.dumps({"eos_token_id": STOP_IDS, "pad_token_id": 199999}))
    write_tokenizer(out)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(build(sys.argv[1]))
