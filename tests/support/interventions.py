"""What the intervention tests share (tests/unit/models/test_hooks.py, tests/unit/interpret/, tests/unit/cli,
tests/unit/jobs): small GPTs of every architecture with large random weights, Hugging Face Llama-family models, and
independent implementations of every intervention with plain PyTorch forward hooks on the modules (no llmviz hook
point involved). Each reference runs the model's ordinary ``forward`` (the fused attention kernel), so agreement
also shows the hooked path computes the same model."""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from llmviz.models.gpt import GPT, GPTConfig
from llmviz.models.presets import PRESETS

# every architecture switch: GPT-2 (learned positions, LayerNorm, GELU), sinusoidal and no positions, attention only,
# Llama (RoPE, RMSNorm, SwiGLU, grouped-query), Qwen (qkv bias, tied), multi-query, a mixture of experts
SMALL = dict(vocab_size=97, context_length=16, d_model=32, n_heads=4, n_layers=2, dropout=0.0)
ARCHITECTURES = {
    "gpt2": GPTConfig(**SMALL),
    "sinusoidal": GPTConfig(**SMALL, positions="sinusoidal"),
    "no-positions": GPTConfig(**SMALL, positions="none"),
    "attention-only": GPTConfig(**SMALL, mlp=False),
    "llama": PRESETS["llama-style"].replace(**SMALL),
    "qwen": PRESETS["qwen-style"].replace(**{**SMALL, "n_heads": 8}),
    "multi-query": PRESETS["llama-style"].replace(**SMALL, n_kv_heads=1),
    "moe": PRESETS["moe-tiny"].replace(**SMALL),
}


def model_of(config: GPTConfig, seed: int = 0, scale: float = 0.3) -> GPT:
    torch.manual_seed(seed)
    model = GPT(config).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # larger random weights than GPT-2's init: logits far from zero, so checks have teeth
        for name, parameter in model.named_parameters():
            if name.endswith(".scale"):
                parameter.copy_(1.0 + 0.1 * torch.randn(parameter.shape, generator=generator))
            else:
                parameter.copy_(scale * torch.randn(parameter.shape, generator=generator))
    return model


@contextlib.contextmanager
def hooked(handles):
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def head_slices(model, layer: int, heads: list[int]) -> list[slice]:
    """The columns of the input of W_O (the heads' outputs side by side, head h at h·d_head …) for ``heads``."""
    size = model.config.head_dim
    return [slice(head * size, (head + 1) * size) for head in heads]


def proj_inputs(model, ids: torch.Tensor) -> dict[int, torch.Tensor]:
    """Every layer's input to W_O (B, T, C): the heads' outputs, captured with forward pre-hooks."""
    seen: dict[int, torch.Tensor] = {}
    handles = [
        block.attn.proj.register_forward_pre_hook(lambda m, args, layer=layer: seen.__setitem__(layer, args[0].clone()))
        for layer, block in enumerate(model.blocks)
    ]
    with hooked(handles), torch.no_grad():
        model(ids)
    return seen


def ablated_loss(model, ids: torch.Tensor, heads: list[tuple[int, int]], mode: str = "zero") -> torch.Tensor:
    """(B,) the loss on each row with ``heads`` knocked out: their columns of W_O's input set to 0, or to their mean
    over every position of the row (mean ablation)."""
    means = proj_inputs(model, ids) if mode == "mean" else {}

    def pre_hook(module, args, layer):
        x = args[0].clone()  # (B, T, C)
        for piece in head_slices(model, layer, [h for at, h in heads if at == layer]):
            x[..., piece] = 0.0 if mode == "zero" else means[layer][..., piece].mean(dim=(0, 1))
        return (x,)

    handles = [
        block.attn.proj.register_forward_pre_hook(lambda m, a, layer=layer: pre_hook(m, a, layer))
        for layer, block in enumerate(model.blocks)
    ]
    with hooked(handles), torch.no_grad():
        logits, _ = model(ids)
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none").mean(-1)


def block_inputs(model, ids: torch.Tensor) -> dict[int, torch.Tensor]:
    """Every block's input (the residual stream entering it), (B, T, C)."""
    seen: dict[int, torch.Tensor] = {}
    handles = [
        block.register_forward_pre_hook(lambda m, args, layer=layer: seen.__setitem__(layer, args[0].clone()))
        for layer, block in enumerate(model.blocks)
    ]
    with hooked(handles), torch.no_grad():
        model(ids)
    return seen


def module_outputs(model, ids: torch.Tensor, which: str) -> dict[int, torch.Tensor]:
    """Every block's attention output or MLP output (B, T, C), captured with forward hooks."""
    seen: dict[int, torch.Tensor] = {}

    def keep(output, layer):
        seen[layer] = (output[0] if isinstance(output, tuple) else output).clone()

    handles = [
        getattr(block, which).register_forward_hook(lambda m, a, out, layer=layer: keep(out, layer))
        for layer, block in enumerate(model.blocks)
    ]
    with hooked(handles), torch.no_grad():
        model(ids)
    return seen


def patched_logits(model, clean: torch.Tensor, corrupted: torch.Tensor, component: str, layer: int, index: int):
    """The corrupted run (1, T) with one clean activation put in: ``resid_pre`` / ``attn.out`` / ``mlp.out`` at
    position ``index`` of block ``layer``, or ``attn.z``: head ``index``'s output at every position."""
    block = model.blocks[layer]
    if component == "resid_pre":
        source = block_inputs(model, clean)[layer]

        def pre(module, args):
            x = args[0].clone()
            x[:, index] = source[:, index]
            return (x, *args[1:])

        handle = block.register_forward_pre_hook(pre)
    elif component == "attn.z":
        source = proj_inputs(model, clean)[layer]
        [piece] = head_slices(model, layer, [index])

        def pre(module, args):
            x = args[0].clone()
            x[..., piece] = source[..., piece]
            return (x,)

        handle = block.attn.proj.register_forward_pre_hook(pre)
    else:
        which = {"attn.out": "attn", "mlp.out": "mlp"}[component]
        source = module_outputs(model, clean, which)[layer]

        def post(module, args, output):
            tensor = (output[0] if isinstance(output, tuple) else output).clone()
            tensor[:, index] = source[:, index]
            return (tensor, *output[1:]) if isinstance(output, tuple) else tensor

        handle = getattr(block, which).register_forward_hook(post)
    with hooked([handle]), torch.no_grad():
        logits, _ = model(corrupted)
    return logits


def steered_logits(model, ids: torch.Tensor, layer: int, vector: torch.Tensor) -> torch.Tensor:
    """The logits with ``vector`` added to the input of block ``layer`` at every position."""

    def pre(module, args):
        return (args[0] + vector, *args[1:])

    with hooked([model.blocks[layer].register_forward_pre_hook(pre)]), torch.no_grad():
        logits, _ = model(ids)
    return logits


LLAMA_SHAPE = dict(
    vocab_size=300,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    max_position_embeddings=64,
)


def make_hf_causal_lm(kind: str, seed: int = 0):
    """A transformers Llama (grouped-query: 2 key/value heads) or Qwen2 (biases in W_Q, W_K, W_V) with every weight
    random (norm scales near 1), eager attention: what llmviz.hub.llama loads into its GPT."""
    import transformers

    config_class, model_class = {
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
    }[kind]
    config = config_class(**LLAMA_SHAPE, num_key_value_heads=2)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = model_class(config).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            parameter.copy_(1.0 + 0.1 * noise if name.endswith("norm.weight") else 0.15 * noise)
    return model
