"""The GPT presets by name: GPT-2 small as OpenAI published it, the small GPTs the pages and the CLI train, an
attention-only GPT, and the shapes of the Llama family (Llama, SmolLM2, Qwen2, a small mixture of experts), each a
:class:`~llmviz.models.gpt.GPTConfig` (``python -m llmviz train --model gpt-micro``, the Model page's Preset box).

>>> PRESETS["gpt-micro"].n_layers, PRESETS["attn-only-2l"].mlp
(2, False)
"""

from __future__ import annotations

from typing import Literal

from llmviz.models.gpt import GPTConfig

PresetName = Literal[
    "gpt2-124m",
    "gpt-mini",
    "gpt-micro",
    "gpt-nano",
    "attn-only-2l",
    "llama-style",
    "smollm2-135m-shapes",
    "qwen-style",
    "moe-tiny",
]

PRESETS: dict[PresetName, GPTConfig] = {
    # GPT-2 small as OpenAI published it (Radford et al., 2019; its config.json): a bias in W_Q, W_K, W_V and the
    # output head tied to the token embedding, 124,439,808 parameters
    "gpt2-124m": GPTConfig(
        vocab_size=50257,
        context_length=1024,
        d_model=768,
        n_heads=12,
        n_layers=12,
        dropout=0.1,
        qkv_bias=True,
        tie_weights=True,
    ),
    "gpt-mini": GPTConfig(vocab_size=1024, context_length=128, d_model=128, n_heads=4, n_layers=4, dropout=0.0),
    "gpt-micro": GPTConfig(vocab_size=512, context_length=64, d_model=64, n_heads=4, n_layers=2, dropout=0.0),
    "gpt-nano": GPTConfig(vocab_size=256, context_length=32, d_model=32, n_heads=2, n_layers=2, dropout=0.0),
    # two attention-only layers: the smallest model that forms induction heads (Olsson et al., 2022)
    "attn-only-2l": GPTConfig(
        vocab_size=64, context_length=32, d_model=64, n_heads=4, n_layers=2, dropout=0.0, mlp=False
    ),
    # gpt-mini's size with Llama's choices: RoPE, RMSNorm, SwiGLU (hidden ≈ 8/3 · d_model), 2 key/value heads
    # for 4 query heads, no biases, an untied head
    "llama-style": GPTConfig(
        vocab_size=1024,
        context_length=128,
        d_model=128,
        n_heads=4,
        n_layers=4,
        dropout=0.0,
        positions="rope",
        norm="rmsnorm",
        mlp_kind="swiglu",
        d_mlp=344,
        n_kv_heads=2,
        bias=False,
        qkv_bias=False,
        tie_weights=False,
    ),
    # the shapes of HuggingFaceTB/SmolLM2-135M (its config.json): 134,515,008 parameters, random weights
    "smollm2-135m-shapes": GPTConfig(
        vocab_size=49152,
        context_length=8192,
        d_model=576,
        n_heads=9,
        n_layers=30,
        dropout=0.0,
        positions="rope",
        rope_theta=100000.0,
        norm="rmsnorm",
        mlp_kind="swiglu",
        d_mlp=1536,
        n_kv_heads=3,
        bias=False,
        qkv_bias=False,
        tie_weights=True,
    ),
    # Qwen2's choices at gpt-mini's size: like Llama but with biases in W_Q, W_K, W_V, θ = 1,000,000,
    # RMSNorm ε = 1e-6, 4 query heads per key/value head and a tied head
    "qwen-style": GPTConfig(
        vocab_size=1024,
        context_length=128,
        d_model=128,
        n_heads=8,
        n_layers=4,
        dropout=0.0,
        positions="rope",
        rope_theta=1_000_000.0,
        norm="rmsnorm",
        norm_eps=1e-6,
        mlp_kind="swiglu",
        d_mlp=344,
        n_kv_heads=2,
        bias=False,
        qkv_bias=True,
        tie_weights=True,
    ),
    # Mixtral's block at gpt-micro's size: 4 SwiGLU experts per block, each token routed to 2
    "moe-tiny": GPTConfig(
        vocab_size=512,
        context_length=64,
        d_model=64,
        n_heads=4,
        n_layers=2,
        dropout=0.0,
        positions="rope",
        norm="rmsnorm",
        mlp_kind="swiglu",
        d_mlp=128,
        n_kv_heads=2,
        n_experts=4,
        experts_top_k=2,
        bias=False,
        qkv_bias=False,
        tie_weights=False,
    ),
}
