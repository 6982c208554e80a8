"""A tiny random-weight llama GGUF for launch tests: 12 decoder layers, 64-wide, a 300-token
SentencePiece-style vocabulary (3 special tokens, the 256 byte tokens SPM's byte fallback looks
up, and a few word pieces). Written with the `gguf` package (gguf-py, the writer llama.cpp's own
conversion scripts use); tensor names and metadata keys are those of `gguf.constants` for
`MODEL_ARCH.LLAMA`, which llama.cpp's `src/llama-model.cpp` (LLM_ARCH_LLAMA) loads."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["N_LAYER", "write_tiny_llama"]

N_LAYER = 12
N_EMBD, N_HEAD, N_HEAD_KV, N_FF, N_CTX = 64, 4, 2, 128, 4096
PIECES = ["▁", "▁a", "▁the", "▁hello", "▁world", "a", "b", "c", "d", "e", "o", "l", "h", "r", "w", "t", "s", "n", "i"]


def _vocab() -> tuple[list[str], list[float], list[int]]:
    from gguf import TokenType

    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + PIECES
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL] + [TokenType.BYTE] * 256 + [TokenType.NORMAL] * len(PIECES)
    scores = [0.0] * 259 + [-float(i) for i in range(len(PIECES))]
    return tokens, scores, [int(t) for t in types]


def write_tiny_llama(path: Path, seed: int = 0) -> Path:
    """Write the model to `path` (random weights from `seed`) and return the path."""
    import gguf

    rng = np.random.default_rng(seed)
    tokens, scores, types = _vocab()
    n_vocab, head_dim = len(tokens), N_EMBD // N_HEAD

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.05).astype(np.float32)

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("partitioner-e2e-tiny-llama")
    writer.add_context_length(N_CTX)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD_KV)
    writer.add_rope_dimension_count(head_dim)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_vocab_size(n_vocab)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    tensors = {"token_embd.weight": w(n_vocab, N_EMBD), "output_norm.weight": np.ones(N_EMBD, np.float32),
               "output.weight": w(n_vocab, N_EMBD)}
    for i in range(N_LAYER):
        tensors.update({
            f"blk.{i}.attn_norm.weight": np.ones(N_EMBD, np.float32),
            f"blk.{i}.attn_q.weight": w(N_EMBD, N_EMBD),
            f"blk.{i}.attn_k.weight": w(N_HEAD_KV * head_dim, N_EMBD),
            f"blk.{i}.attn_v.weight": w(N_HEAD_KV * head_dim, N_EMBD),
            f"blk.{i}.attn_output.weight": w(N_EMBD, N_EMBD),
            f"blk.{i}.ffn_norm.weight": np.ones(N_EMBD, np.float32),
            f"blk.{i}.ffn_gate.weight": w(N_FF, N_EMBD),
            f"blk.{i}.ffn_up.weight": w(N_FF, N_EMBD),
            f"blk.{i}.ffn_down.weight": w(N_EMBD, N_FF),
        })
    for name, data in tensors.items():
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


if __name__ == "__main__":
    import sys

    print(write_tiny_llama(Path(sys.argv[1])))
