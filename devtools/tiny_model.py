"""Make a tiny random-weight Llama and a byte-level BPE tokenizer on disk, with no download.

About 3 s and 340 KB. head_dim is 64 (the CPU attention kernels reject 16).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
WORDS = (
    "the a ledger token vllm server counts input output cache prefix hit rate speed window "
    "today hour day week total coverage writer heartbeat queue sqlite file run restart gpu "
    "cost million model prompt answer question status bot report number time second minute"
).split()


def _corpus(n_lines: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    return [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(4, 24))) for _ in range(n_lines)]


def make_tiny_model(dest: Path, seed: int = 0) -> Path:
    """Write the model folder (idempotent: an existing complete folder is reused)."""
    dest = Path(dest)
    if (dest / "config.json").exists() and (dest / "tokenizer.json").exists():
        return dest
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    dest.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=["<s>", "</s>", "<unk>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_corpus(4000, seed), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(dest)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=fast.vocab_size if fast.vocab_size >= 512 else 512,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(dest, safe_serialization=True)
    cfg = json.loads((dest / "config.json").read_text())
    cfg["torch_dtype"] = "float32"
    (dest / "config.json").write_text(json.dumps(cfg, indent=2))
    return dest


if __name__ == "__main__":
    print(make_tiny_model(Path(sys.argv[1] if len(sys.argv) > 1 else "build/tiny-model")))
