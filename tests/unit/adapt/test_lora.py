"""LoRA against hand derivations: y = x Wᵀ + b + (α/r)·x Aᵀ Bᵀ, merged weights, counts, ranks, a lab run."""

import pickle

import pytest
import torch
import torch.nn as nn

from llmviz.adapt import lora
from llmviz.data import corpus
from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT
from llmviz.models.presets import PRESETS
from llmviz.training.config import TrainConfig
from llmviz.training.dataset import prepare_data

NAMES = corpus.load("names")[:4000]


def trained_adapters(model: nn.Module, seed: int = 0) -> None:
    """Give every B random values (a fresh adapter has B = 0, which would hide any mistake)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for adapter in lora.adapters(model).values():
            for b in adapter.lora_B:
                b.copy_(torch.randn(b.shape, generator=generator) * 0.1)


def test_linear_adapter_is_the_hand_formula():
    torch.manual_seed(0)
    base = nn.Linear(6, 10)
    adapter = lora.LoRALinear(base, rank=2, alpha=6, slices=[(0, 4), (7, 10)])
    trained_adapters(adapter)
    x = torch.randn(3, 5, 6)
    delta = torch.zeros(10, 6)
    delta[0:4] = 3.0 * adapter.lora_B[0] @ adapter.lora_A[0]  # α/r = 3
    delta[7:10] = 3.0 * adapter.lora_B[1] @ adapter.lora_A[1]
    expected = x @ (base.weight + delta).T + base.bias
    assert torch.allclose(adapter(x), expected, atol=1e-6)
    assert torch.allclose(adapter.delta_weight(), delta)
    assert torch.equal(adapter.delta_weight()[4:7], torch.zeros(3, 6))  # rows without an adapter stay frozen
    assert torch.allclose(adapter.merged()(x), expected, atol=1e-6)


def test_fresh_adapters_change_nothing():
    model = GPT(PRESETS["gpt-nano"]).eval()
    idx = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(1))
    before, _ = model(idx)
    lora.add_adapters(model, lora.LoRAConfig(rank=4, targets=("q", "k", "v", "proj", "mlp")))
    after, _ = model(idx)
    assert torch.equal(before, after)  # B = 0 at the start


@pytest.mark.parametrize("targets", [("q",), ("q", "v"), ("k", "proj"), ("q", "k", "v", "proj", "mlp")])
def test_merged_model_gives_the_adapters_logits(targets):
    torch.manual_seed(0)
    model = GPT(PRESETS["gpt-nano"]).eval()
    lora.add_adapters(model, lora.LoRAConfig(rank=3, alpha=5, targets=targets))
    trained_adapters(model)
    idx = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(2))
    adapted, _ = model(idx)
    merged = lora.merged_copy(model)
    assert not lora.adapters(merged)
    assert type(merged.blocks[0].attn.qkv) is nn.Linear
    plain = GPT(model.config)  # the merged weights load into an ordinary GPT
    plain.load_state_dict(merged.state_dict())
    plain.eval()
    assert (plain(idx)[0] - adapted).abs().max() <= 1e-5
    # the recorded (explicit) attention path reads .weight and sees the adapters too
    _, _ = model(idx)
    cache = {}
    recorded, _ = model(idx, cache=cache)
    assert (recorded - adapted).abs().max() <= 1e-5


def test_trained_parameter_count_by_hand():
    model = GPT(PRESETS["gpt-mini"])  # d = 128, 4 layers
    d, r, layers = 128, 4, 4
    lora.add_adapters(model, lora.LoRAConfig(rank=r, targets=("q", "v", "mlp")))
    per_layer = 2 * r * (d + d) + r * (d + 4 * d) + r * (4 * d + d)
    assert lora.trainable_parameters(model) == layers * per_layer == 28672
    assert lora.adapter_count(GPT(PRESETS["gpt-mini"]), lora.LoRAConfig(rank=r, targets=("q", "v", "mlp"))) == 28672


def test_memory_comparison_is_adamw_two_floats_per_trained_parameter():
    model = GPT(PRESETS["gpt-mini"])
    total = sum(p.numel() for p in model.parameters())
    memory = lora.memory_comparison(model, lora.LoRAConfig(rank=8, targets=("q", "v")))
    extra = 4 * 2 * 8 * (128 + 128)
    assert memory["full fine-tuning"].optimizer_bytes == 2 * 4 * total
    assert memory["LoRA"].trained_parameters == extra
    assert memory["LoRA"].optimizer_bytes == 2 * 4 * extra
    assert memory["LoRA"].weight_bytes == 4 * (total + extra)
    assert memory["full fine-tuning"].total_bytes == 16 * total  # weights + gradients + 2 AdamW states


def test_delta_w_has_rank_at_most_r():
    torch.manual_seed(0)
    model = GPT(PRESETS["gpt-mini"])
    before = {k: v.clone() for k, v in model.state_dict().items()}
    lora.add_adapters(model, lora.LoRAConfig(rank=3, targets=("q", "k", "v", "proj", "mlp")))
    trained_adapters(model)
    after = lora.merged_copy(model).state_dict()
    deltas = lora.delta_weights(before, after)
    assert set(deltas) == {
        f"blocks.{i}.{m}.weight" for i in range(4) for m in ("attn.qkv", "attn.proj", "mlp.fc", "mlp.proj")
    }
    proj = lora.singular_values(deltas["blocks.0.attn.proj.weight"])
    # W + ΔW − W carries float32 rounding (~1e-9): the rank counts singular values above that noise
    assert (
        lora.numerical_rank(proj)
        == 3
        == torch.linalg.matrix_rank(deltas["blocks.0.attn.proj.weight"].double(), rtol=1e-4)
    )
    exact = lora.adapters(model)["blocks.0.attn.proj"].delta_weight()
    assert torch.allclose(deltas["blocks.0.attn.proj.weight"], exact, atol=1e-6)
    assert torch.allclose(proj[:3], torch.linalg.svdvals(exact.double()).float()[:3], rtol=1e-3)
    qkv = lora.singular_values(deltas["blocks.0.attn.qkv.weight"])  # three slices of rank 3 each
    assert lora.numerical_rank(qkv) == 9


@pytest.mark.parametrize("bad", [dict(rank=0), dict(alpha=-1.0), dict(targets=("w_x",)), dict(targets=())])
def test_bad_configs_are_clear_errors(bad):
    with pytest.raises(ConfigError):
        lora.LoRAConfig(**bad)


def test_attention_only_model_has_no_mlp_to_adapt():
    with pytest.raises(ConfigError, match="MLP"):
        lora.add_adapters(GPT(PRESETS["attn-only-2l"]), lora.LoRAConfig(targets=("mlp",)))


@pytest.mark.parametrize("target", ["q", "k", "v"])
def test_grouped_query_attention_adapts_only_the_chosen_matrix(target):
    """With fewer key/value heads W_K and W_V are narrower than W_Q: an adapter on one of them changes exactly its
    rows of the fused qkv weight, as the attention itself splits it (it used to take d rows each)."""
    torch.manual_seed(0)
    config = PRESETS["llama-style"].replace(
        vocab_size=256, context_length=32, d_model=32, n_heads=4, n_layers=2, d_mlp=64, n_kv_heads=2
    )
    model = GPT(config).eval()
    before = [w.clone() for w in model.blocks[0].attn.qkv.weight.split(model.blocks[0].attn.split_sizes())]
    lora.add_adapters(model, lora.LoRAConfig(rank=2, targets=(target,)))
    trained_adapters(model)
    merged = lora.merged_copy(model)
    after = merged.blocks[0].attn.qkv.weight.split(merged.blocks[0].attn.split_sizes())
    changed = [name for name, b, a in zip("qkv", before, after, strict=True) if not torch.equal(b, a)]
    assert changed == [target]
    idx = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(2))
    assert (model(idx)[0] - merged(idx)[0]).abs().max() <= 1e-5


def test_a_mixture_of_experts_says_its_mlp_cannot_be_adapted():
    with pytest.raises(ConfigError, match="mixture of experts"):
        lora.add_adapters(GPT(PRESETS["moe-tiny"]), lora.LoRAConfig(targets=("q", "mlp")))


def test_lora_run_trains_only_adapters_and_its_model_is_the_merged_gpt():
    torch.manual_seed(0)
    pretrained = GPT(PRESETS["gpt-nano"].replace(vocab_size=64, context_length=16)).eval()
    config = TrainConfig(
        model="gpt-nano",
        tokenizer="char",
        context_length=16,
        batch_size=8,
        steps=12,
        lr=1e-2,
        warmup_steps=2,
        eval_interval=6,
        eval_batches=1,
        seed=3,
    )
    dataset = prepare_data(NAMES, config)
    pretrained = GPT(pretrained.config.replace(vocab_size=dataset.vocab_size)).eval()
    frozen = {k: v.clone() for k, v in pretrained.state_dict().items()}
    trainer = lora.LoRATrainer(
        config, dataset, initial_model=pretrained, lora=lora.LoRAConfig(rank=2, targets=("q", "v"))
    )
    history = list(trainer.run())
    assert [m.step for m in history] == list(range(1, 13))
    assert all(torch.equal(v, frozen[k]) for k, v in pretrained.state_dict().items())  # the original is untouched
    changed = {k for k, v in trainer.model.state_dict().items() if not torch.equal(v, frozen[k])}
    assert changed == {"blocks.0.attn.qkv.weight", "blocks.1.attn.qkv.weight"}
    d = pretrained.config.d_model
    assert torch.equal(
        trainer.model.state_dict()["blocks.0.attn.qkv.weight"][d : 2 * d], frozen["blocks.0.attn.qkv.weight"][d : 2 * d]
    )
    idx = dataset.val_ids[:16][None]
    trainer.model.eval()
    trainer.adapted.eval()
    assert (trainer.model(idx)[0] - trainer.adapted(idx)[0]).abs().max() <= 1e-5
    assert type(trainer.model) is GPT and not lora.adapters(trainer.model)
    pickle.loads(pickle.dumps(trainer))  # lab runs are pickled into worker processes


@pytest.mark.parametrize("preset", ["llama-style", "qwen-style", "gpt-mini"])
@pytest.mark.parametrize("targets", [("q", "v"), ("k", "proj"), ("q", "k", "v", "proj", "mlp")])
def test_counted_parameters_are_the_adapters_the_model_really_gets(preset, targets):
    """The page's count (and the optimizer memory from it) is what add_adapters really trains, also with
    grouped-query attention (W_K, W_V have kv_heads·head_dim rows) and an MLP whose width is not 4·d."""
    model = GPT(PRESETS[preset])
    config = lora.LoRAConfig(rank=4, targets=targets)
    counted = lora.memory_comparison(model, config)["LoRA"].trained_parameters
    by_hand = {
        "q": (128, 128),
        "k": (128, model.config.kv_heads * 128 // model.config.n_heads),
        "v": (128, model.config.kv_heads * 128 // model.config.n_heads),
        "proj": (128, 128),
        "mlp": (128, model.config.mlp_width),
    }
    per_layer = sum(4 * (d_in + d_out) for t, (d_in, d_out) in by_hand.items() if t in targets)
    if "mlp" in targets:
        per_layer += 4 * (model.config.mlp_width + 128)  # the MLP's second layer: d_mlp → d
    assert counted == 4 * per_layer
    lora.add_adapters(model, config)
    assert lora.trainable_parameters(model) == counted
