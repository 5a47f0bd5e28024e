"""Architecture switches on GPTConfig: RoPE, RMSNorm, SwiGLU, grouped-query attention, mixture of experts."""

from __future__ import annotations

import json
import math
import shutil

import pytest
import torch
import torch.nn.functional as F

from llmviz.errors import ConfigError
from llmviz.models.gpt import GPT, GPTConfig, cache_names, count_parameters_without_building, load_balancing_loss
from llmviz.models.layers import LayerNorm, RMSNorm, apply_rope, rope_cos_sin, sinusoidal_positions
from llmviz.models.presets import PRESETS

SMALL = [name for name, config in PRESETS.items() if config.d_model <= 128]
TINY_SWITCHES = {
    "rope": dict(positions="rope"),
    "sinusoidal": dict(positions="sinusoidal"),
    "nope": dict(positions="none"),
    "rmsnorm": dict(norm="rmsnorm"),
    "swiglu": dict(mlp_kind="swiglu", d_mlp=48),
    "gqa": dict(n_kv_heads=2),
    "mqa": dict(n_kv_heads=1),
    "moe": dict(n_experts=3, experts_top_k=2, d_mlp=32),
    "no-bias": dict(bias=False, qkv_bias=False),
    "exact-gelu": dict(gelu="exact"),
    "llama": dict(positions="rope", norm="rmsnorm", mlp_kind="swiglu", n_kv_heads=2, bias=False, tie_weights=False),
}


def tiny(**switches) -> GPTConfig:
    return GPTConfig(vocab_size=40, context_length=16, d_model=32, n_heads=4, n_layers=2, dropout=0.0, **switches)


def test_default_config_is_the_gpt_of_before(tmp_path):
    """The default switches build exactly the parameters the shipped checkpoint has (no new names)."""
    import safetensors.torch

    from llmviz.training.checkpoint import load_checkpoint

    model, _, meta = load_checkpoint("data/gpt-python-docs")
    names = set(safetensors.torch.load_file("data/gpt-python-docs/model.safetensors"))
    assert set(model.state_dict()) - {"lm_head.weight"} <= names | {"lm_head.weight"}
    # the shipped GPT as a checkpoint of before the switches existed writes it: the fields of then, no others
    folder = tmp_path / "old"
    shutil.copytree("data/gpt-python-docs", folder)
    old = json.loads((folder / "checkpoint.json").read_text())
    then = ("vocab_size", "context_length", "d_model", "n_heads", "n_layers", "dropout", "qkv_bias", "tie_weights")
    old["model"]["config"] = {name: old["model"]["config"][name] for name in then}
    (folder / "checkpoint.json").write_text(json.dumps(old))
    model, _, meta = load_checkpoint(folder)
    assert "positions" not in meta["model"]["config"]  # an old checkpoint: every new field takes its default
    assert (
        model.config.positions == "learned"
        and model.config.norm == "layernorm"
        and model.config.kv_heads == model.config.n_heads
        and model.config.n_experts == 0
        and model.config.mlp_kind == "gelu"
        and model.config.gelu == "tanh"
    )
    ids = torch.arange(20)[None]
    with torch.no_grad():
        torch.testing.assert_close(model.eval()(ids)[0], load_checkpoint("data/gpt-python-docs")[0].eval()(ids)[0])


@pytest.mark.parametrize(
    "bad, words",
    [
        (dict(positions="alibi"), "positions must be one of"),
        (dict(norm="batchnorm"), "norm must be one of"),
        (dict(mlp_kind="relu"), "mlp_kind must be one of"),
        (dict(gelu="erf"), "gelu must be one of"),
        (dict(n_kv_heads=3), "not a multiple of n_kv_heads"),
        (dict(n_experts=1), "n_experts must be 0"),
        (dict(n_experts=4, experts_top_k=5), "experts_top_k must be between 1 and"),
        (dict(n_experts=4, mlp=False), "needs mlp=True"),
        (dict(rope_theta=0.5), "rope_theta"),
        (dict(router_aux_loss_coef=-1.0), "router_aux_loss_coef"),
    ],
)
def test_bad_switches_are_refused_with_the_reason(bad, words):
    with pytest.raises(ConfigError, match=words):
        tiny(**bad)


def test_the_gelu_switch_picks_the_mlps_activation():
    """gelu="tanh" (GPT-2's, the default) and gelu="exact" (nanoGPT's nn.GELU) on the same weights: each MLP's
    hidden layer is its own form of GELU of its pre-activation, as torch computes it."""
    tanh, exact = GPT(tiny()), GPT(tiny(gelu="exact"))
    exact.load_state_dict(tanh.state_dict())  # the same parameters: the switch adds none
    ids = torch.randint(0, 40, (2, 16), generator=torch.Generator().manual_seed(0))
    for model, approximate in ((tanh, "tanh"), (exact, "none")):
        _, _, cache = model.eval().run_with_cache(ids)
        pre, hidden = cache["blocks.1.mlp.pre"], cache["blocks.1.mlp.hidden"]
        torch.testing.assert_close(hidden, F.gelu(pre, approximate=approximate), atol=0, rtol=0)
        with torch.no_grad():  # the fast path computes what the recorded one does
            torch.testing.assert_close(model(ids)[0], cache["logits"], atol=1e-6, rtol=1e-5)
    assert not torch.equal(tanh(ids)[0], exact(ids)[0])


def test_rope_needs_an_even_head_dim():
    with pytest.raises(ConfigError, match="must be even"):
        GPTConfig(d_model=12, n_heads=4, positions="rope")


@pytest.mark.parametrize("name", list(TINY_SWITCHES))
def test_every_switch_runs_records_and_decodes_with_the_kv_cache(name):
    config = tiny(**TINY_SWITCHES[name])
    torch.manual_seed(0)
    model = GPT(config).eval()
    idx = torch.randint(0, 40, (2, 11))
    fast, _ = model(idx)
    explicit, _, cache = model.run_with_cache(idx)
    torch.testing.assert_close(explicit, fast, atol=1e-5, rtol=1e-5)  # the recording path computes the same
    assert list(cache) == cache_names(config)
    assert cache["blocks.0.attn.pattern"].shape == (2, 4, 11, 11)
    assert cache["blocks.0.attn.k"].shape == (2, config.kv_heads, 11, 8)
    first, past = model.forward_with_kv_cache(idx[:, :6])
    rest, past = model.forward_with_kv_cache(idx[:, 6:], past)
    torch.testing.assert_close(torch.cat([first, rest], dim=1), fast, atol=1e-5, rtol=1e-5)
    assert past[0][0].shape == (2, config.kv_heads, 11, 8)  # the cache keeps n_kv_heads heads only
    assert sum(k.numel() + v.numel() for k, v in past) == 2 * 11 * config.kv_cache_values_per_token


@pytest.mark.parametrize("name", SMALL)
def test_every_small_preset_builds_and_trains_one_step(name):
    config = PRESETS[name].replace(vocab_size=50, context_length=12)
    torch.manual_seed(0)
    model = GPT(config)
    idx = torch.randint(0, 50, (2, 12))
    _, loss = model(idx, idx)
    loss.backward()
    assert math.isfinite(loss.item())
    assert all(p.grad is not None for n, p in model.named_parameters() if ".mlp.experts." not in n)


def test_smollm2_shapes_preset_has_the_parameter_count_of_transformers_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    c = PRESETS["smollm2-135m-shapes"]
    hf_config = LlamaConfig(
        vocab_size=c.vocab_size,
        hidden_size=c.d_model,
        intermediate_size=c.d_mlp,
        num_hidden_layers=c.n_layers,
        num_attention_heads=c.n_heads,
        num_key_value_heads=c.n_kv_heads,
        max_position_embeddings=c.context_length,
        tie_word_embeddings=True,
    )
    with torch.device("meta"):
        reference = LlamaForCausalLM(hf_config)
    assert sum(count_parameters_without_building(c).values()) == reference.num_parameters() == 134_515_008


def test_grouped_query_attention_shrinks_w_k_w_v_and_the_cache():
    multi, grouped = GPT(tiny()), GPT(tiny(n_kv_heads=1))
    assert multi.blocks[0].attn.qkv.weight.shape == (3 * 32, 32)
    assert grouped.blocks[0].attn.qkv.weight.shape == ((4 + 2) * 8, 32)  # 4 query heads, 1 key and 1 value head
    assert tiny(n_kv_heads=1).kv_cache_values_per_token * 4 == tiny().kv_cache_values_per_token


def test_grouped_query_attention_equals_multi_head_attention_with_repeated_key_value_heads():
    """GQA with 2 kv heads = MHA whose heads 0,1 share kv head 0 and heads 2,3 share kv head 1."""
    torch.manual_seed(3)
    grouped = GPT(tiny(n_kv_heads=2)).eval()
    multi = GPT(tiny()).eval()
    state = grouped.state_dict()
    for layer in range(2):
        w = state[f"blocks.{layer}.attn.qkv.weight"]
        q, k, v = w.split([32, 16, 16])
        repeat = lambda m: m.view(2, 8, 32).repeat_interleave(2, dim=0).reshape(32, 32)  # noqa: E731
        state[f"blocks.{layer}.attn.qkv.weight"] = torch.cat([q, repeat(k), repeat(v)])
    multi.load_state_dict(state)
    idx = torch.randint(0, 40, (1, 9))
    torch.testing.assert_close(grouped(idx)[0], multi(idx)[0], atol=1e-5, rtol=1e-5)


def test_rmsnorm_equals_torch_rmsnorm_and_its_steps():
    x = torch.randn(3, 5, 16)
    mine = RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        mine.scale.uniform_(0.5, 1.5)
    reference = torch.nn.RMSNorm(16, eps=1e-6)
    reference.weight.data.copy_(mine.scale.data)
    torch.testing.assert_close(mine(x), reference(x))
    torch.testing.assert_close(mine.steps(x)["output"], reference(x))
    hand = x / torch.sqrt((x**2).mean(-1, keepdim=True) + 1e-6) * mine.scale
    torch.testing.assert_close(mine(x), hand)


def test_layernorm_without_bias_has_no_shift():
    norm = LayerNorm(8, bias=False)
    x = torch.randn(2, 8)
    assert norm.shift is None
    torch.testing.assert_close(norm(x), F.layer_norm(x, (8,)))
    torch.testing.assert_close(norm.steps(x)["output"], norm(x))


def test_sinusoidal_positions_follow_the_formula():
    table = sinusoidal_positions(torch.arange(7), 10)
    for p in range(7):
        for i in range(5):
            angle = p / 10000 ** (2 * i / 10)
            assert table[p, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[p, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_rope_rotates_each_pair_by_position_times_its_frequency():
    head_dim, theta = 8, 10000.0
    x = torch.randn(1, 1, 5, head_dim)
    cos, sin = rope_cos_sin(torch.arange(5), head_dim, theta)
    rotated = apply_rope(x, cos, sin)
    for p in range(5):
        for i in range(head_dim // 2):  # pair (i, i + hd/2), Llama's layout
            angle = p * theta ** (-2 * i / head_dim)
            a, b = x[0, 0, p, i].item(), x[0, 0, p, i + head_dim // 2].item()
            assert rotated[0, 0, p, i].item() == pytest.approx(a * math.cos(angle) - b * math.sin(angle), abs=1e-5)
            assert rotated[0, 0, p, i + head_dim // 2].item() == pytest.approx(
                a * math.sin(angle) + b * math.cos(angle), abs=1e-5
            )
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))  # rotations keep lengths


def test_rope_scores_depend_only_on_the_distance():
    q, k = torch.randn(16), torch.randn(16)
    cos, sin = rope_cos_sin(torch.arange(40), 16, 10000.0)

    def score(m, n):
        return float(apply_rope(q, cos[m], sin[m]) @ apply_rope(k, cos[n], sin[n]))

    assert score(5, 2) == pytest.approx(score(33, 30), abs=1e-4) == pytest.approx(score(3, 0), abs=1e-4)


def test_mixture_of_experts_equals_a_hand_written_router():
    torch.manual_seed(4)
    config = tiny(n_experts=3, experts_top_k=2, d_mlp=16)
    moe = GPT(config).eval().blocks[0].mlp
    x = torch.randn(1, 5, 32)
    expected = torch.zeros_like(x)
    probs = torch.softmax(x @ moe.router.weight.T, -1)  # (1, 5, 3)
    for t in range(5):
        top = probs[0, t].argsort(descending=True)[:2]
        for e in top:
            expert = moe.experts[int(e)]
            out = expert.proj(F.gelu(expert.fc(x[0, t]), approximate="tanh"))
            expected[0, t] += probs[0, t, e] / probs[0, t, top].sum() * out
    cache = {}
    torch.testing.assert_close(moe(x, cache, "mlp"), expected, atol=1e-5, rtol=1e-5)
    assert cache["mlp.experts"].shape == (1, 5, 2) and cache["mlp.router_probs"].shape == (1, 5, 3)


def test_load_balancing_loss_by_hand():
    probs = torch.tensor([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8], [0.5, 0.4, 0.1]])
    # top-1: experts 0, 0, 2, 0 → f = (3/4, 0, 1/4); P = mean rows = (0.475, 0.25, 0.275)
    expected = 3 * (0.75 * 0.475 + 0 * 0.25 + 0.25 * 0.275)
    assert load_balancing_loss([probs[:2], probs[2:]], top_k=1).item() == pytest.approx(expected)
    uniform = torch.full((6, 4), 0.25)
    assert load_balancing_loss([uniform], top_k=2).item() == pytest.approx(2.0)


def test_moe_training_loss_adds_the_balancing_term_validation_loss_does_not():
    torch.manual_seed(5)
    model = GPT(tiny(n_experts=4, experts_top_k=2, d_mlp=16, router_aux_loss_coef=0.5))
    idx = torch.randint(0, 40, (2, 10))
    model.train()
    _, train_loss = model(idx, idx)
    model.eval()
    logits, eval_loss, cache = model.run_with_cache(idx, idx)
    cross_entropy = F.cross_entropy(logits.view(-1, 40), idx.view(-1))
    assert eval_loss.item() == pytest.approx(cross_entropy.item(), abs=1e-6)
    assert train_loss.item() == pytest.approx(cross_entropy.item() + 0.5 * cache["aux_loss"].item(), abs=1e-5)


def test_parameter_breakdown_counts_every_parameter_once():
    for switches in TINY_SWITCHES.values():
        model = GPT(tiny(**switches))
        assert sum(model.parameter_breakdown().values()) == model.num_parameters()
    assert "RMSNorm" in GPT(tiny(norm="rmsnorm")).parameter_breakdown()
    assert GPT(tiny(positions="rope")).parameter_breakdown()["position embedding"] == 0


def test_checkpoints_round_trip_the_switches_and_old_ones_still_load(tmp_path):
    from llmviz.training.checkpoint import load_checkpoint
    from llmviz.training.config import TrainConfig
    from llmviz.training.trainer import Trainer

    text = "the quick brown fox jumps over the lazy dog. " * 60
    config = TrainConfig(
        model="moe-tiny",
        tokenizer="char",
        context_length=16,
        batch_size=4,
        steps=2,
        eval_interval=1,
        architecture={"positions": "sinusoidal", "tie_weights": True},
    )
    trainer = Trainer.from_text(text, config)
    list(trainer.run())
    trainer.save(tmp_path / "new")
    model, tokenizer, meta = load_checkpoint(tmp_path / "new")
    assert model.config == trainer.model.config and model.config.positions == "sinusoidal"
    assert meta["train_config"]["architecture"] == {"positions": "sinusoidal", "tie_weights": True}
    idx = torch.tensor([tokenizer.encode("the lazy fox")])
    trainer.model.eval()
    assert torch.equal(model(idx)[0], trainer.model(idx)[0])

    old = TrainConfig(model="gpt-nano", tokenizer="char", context_length=16, batch_size=4, steps=1, eval_interval=1)
    trainer = Trainer.from_text(text, old)
    trainer.save(tmp_path / "old")
    meta_path = tmp_path / "old" / "checkpoint.json"
    meta = json.loads(meta_path.read_text())
    for name in (
        "positions",
        "rope_theta",
        "norm",
        "norm_eps",
        "mlp_kind",
        "d_mlp",
        "n_kv_heads",
        "n_experts",
        "experts_top_k",
        "router_aux_loss_coef",
        "bias",
    ):
        del meta["model"]["config"][name]  # as written before the switches existed
    del meta["train_config"]["architecture"]
    meta_path.write_text(json.dumps(meta))
    model, _, _ = load_checkpoint(tmp_path / "old")
    assert model.config == trainer.model.config


def test_train_config_carries_switches_and_refuses_bad_ones():
    from llmviz.training.config import TrainConfig
    from llmviz.training.trainer import build_model

    model = build_model(TrainConfig(model="gpt-micro", architecture={"positions": "rope", "n_kv_heads": 2}), 30)
    assert model.config.positions == "rope" and model.config.kv_heads == 2 and model.config.vocab_size == 30
    with pytest.raises(ConfigError, match="architecture switches must be among"):
        TrainConfig(architecture={"colour": "blue"})
    with pytest.raises(ConfigError, match="not a multiple of n_kv_heads"):
        TrainConfig(model="gpt-micro", architecture={"n_kv_heads": 3})
    with pytest.raises(ConfigError, match="apply to the GPT presets"):
        TrainConfig(model="bigram-neural", architecture={"positions": "rope"})


def test_cli_parses_switches():
    from llmviz.cli.main import build_parser
    from llmviz.cli.train import parse_switches

    assert parse_switches(["n_experts=4", "tie-weights=yes", "d_mlp=none"]) == {
        "n_experts": 4,
        "tie_weights": True,
        "d_mlp": None,
    }
    with pytest.raises(ConfigError, match="--arch takes"):
        parse_switches(["colour=blue"])
    with pytest.raises(ConfigError, match="not a value"):
        parse_switches(["bias=maybe"])
    args = build_parser().parse_args(["train", "--model", "llama-style", "--arch", "positions=learned", "--out", "x"])
    assert args.model == "llama-style" and args.arch == ["positions=learned"]


# ---------------------------------------------------------------------------- llmviz.lessons.architectures (what the
# pages draw)


def test_rope_scores_are_constant_along_every_diagonal():
    from llmviz.lessons.architectures import rope_scores

    result = rope_scores(head_dim=16, theta=10000.0, positions=20)
    for distance, (low, high) in result.by_distance.items():
        assert high - low < 1e-4, distance
    assert result.by_distance[0][0] == pytest.approx(result.plain, abs=1e-4)  # distance 0: no net rotation
    assert abs(result.by_distance[5][0] - result.plain) > 1e-3  # further apart, a different score


def test_rope_angles_match_the_model_rotation():
    from llmviz.lessons.architectures import rope_angles, rotate

    found = rope_angles(8, theta=500.0, positions=6)
    v = torch.zeros(8)
    v[1] = 1.0  # pair 1 = dimensions 1 and 5
    turned = rotate(v, 4, theta=500.0)
    angle = math.atan2(turned[5].item(), turned[1].item())
    assert angle == pytest.approx(found.angles[4, 1].item(), abs=1e-5) == pytest.approx(4 * 500 ** (-2 / 8), abs=1e-5)
    assert found.wavelengths[0].item() == pytest.approx(2 * math.pi)


def test_kv_cache_bytes_count_the_tensors_the_model_keeps():
    from llmviz.lessons.architectures import kv_cache_bytes, kv_groups

    for kv in (4, 2, 1):
        config = tiny(n_kv_heads=kv)
        _, past = GPT(config).eval().forward_with_kv_cache(torch.randint(0, 40, (1, 7)))
        kept = sum(t.to(torch.bfloat16).element_size() * t.numel() for pair in past for t in pair)
        assert kv_cache_bytes(config, tokens=7, dtype="bf16") == kept
    assert kv_groups(tiny(n_kv_heads=2)) == [[0, 1], [2, 3]]


def test_gpt2_to_llama_parameter_counts_equal_transformers():
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    from llmviz.lessons.architectures import gpt2_to_llama

    rows = gpt2_to_llama()
    with torch.device("meta"):
        gpt2 = GPT2LMHeadModel(GPT2Config())
        last = rows[-1].config
        llama = LlamaForCausalLM(
            LlamaConfig(
                vocab_size=last.vocab_size,
                hidden_size=last.d_model,
                intermediate_size=last.d_mlp,
                num_hidden_layers=last.n_layers,
                num_attention_heads=last.n_heads,
                num_key_value_heads=last.n_kv_heads,
                tie_word_embeddings=False,
            )
        )
    assert rows[0].parameters == gpt2.num_parameters() == 124_439_808
    assert rows[-1].parameters == llama.num_parameters()
    assert rows[0].kv_cache_bytes_per_token == 2 * 12 * 12 * 64 * 2
    assert rows[-1].kv_cache_bytes_per_token == 2 * 12 * 4 * 64 * 2  # 4 key/value heads instead of 12
    changed = [
        sum(a != b for a, b in zip(r1.config.to_dict().values(), r2.config.to_dict().values()))
        for r1, r2 in zip(rows, rows[1:])
    ]
    assert all(n >= 1 for n in changed)


def test_norm_comparison_equals_torch_norms():
    from llmviz.lessons.architectures import norm_comparison

    stream = torch.randn(5, 16) * 3 + 1.5
    found = norm_comparison(stream)
    torch.testing.assert_close(found["layernorm"], torch.nn.LayerNorm(16, elementwise_affine=False)(stream))
    torch.testing.assert_close(found["rmsnorm"], torch.nn.RMSNorm(16, eps=1e-5, elementwise_affine=False)(stream))
    torch.testing.assert_close(found["rms_rmsnorm"], torch.ones(5), atol=1e-4, rtol=0)
    torch.testing.assert_close(found["mean_layernorm"], torch.zeros(5), atol=1e-5, rtol=0)


def test_mlp_comparison_formulas():
    from llmviz.lessons.architectures import mlp_comparison, mlp_parameters

    found = mlp_comparison(torch.randn(3, 16), hidden=8)
    torch.testing.assert_close(found["gelu"], F.gelu(found["up"], approximate="tanh"))
    torch.testing.assert_close(found["swiglu"], found["gate"] * found["up"])
    gelu_mlp = GPT(tiny()).blocks[0].mlp
    swiglu_mlp = GPT(tiny(mlp_kind="swiglu", d_mlp=48, bias=False)).blocks[0].mlp
    assert mlp_parameters(32, 128, "gelu", bias=True) == sum(p.numel() for p in gelu_mlp.parameters())
    assert mlp_parameters(32, 48, "swiglu") == sum(p.numel() for p in swiglu_mlp.parameters()) == 3 * 32 * 48


def test_predict_then_reveal_questions_compute_their_answers():
    from llmviz.lessons.quiz import kv_cache_question, rope_question

    question = kv_cache_question(12, 4, 8192)
    assert question.options[question.answer] == f"{2 * 24 * 4 * 64 * 8192 * 2 / 2**20:,.1f} MiB" == "192.0 MiB"
    assert len(set(question.options)) == len(question.options) >= 3
    question = rope_question()
    assert question.options[question.answer] == "the same score"
    near, far = [float(x) for x in question.explanation.split("= ")[1:3] for x in [x.split(" ")[0].rstrip(".")]]
    assert near == pytest.approx(far, abs=1e-3)


def test_norm_and_experts_questions_match_the_built_models():
    """The Model page's two questions, against models built here: parameters counted from the modules."""
    from llmviz.lessons.quiz import experts_question, norm_question

    config = PRESETS["gpt2-124m"]
    with torch.device("meta"):  # 124 M parameters: shapes only
        lost = sum(p.numel() for p in GPT(config).parameters()) - sum(
            p.numel() for p in GPT(config.replace(norm="rmsnorm")).parameters()
        )
    question = norm_question(config)
    assert question.options[question.answer] == f"{lost:,}" == f"{(2 * 12 + 1) * 768:,}"  # 25 shifts of 768
    assert len(set(question.options)) == len(question.options) == 4

    moe = PRESETS["moe-tiny"]
    block = GPT(moe).blocks[0].mlp
    one_expert = sum(p.numel() for p in block.experts[0].parameters())
    question = experts_question(moe)
    assert question.options[question.answer] == f"{moe.experts_top_k * one_expert:,}"
    assert f"{len(block.experts) * one_expert:,}" in question.options
    with pytest.raises(ConfigError):
        experts_question(PRESETS["gpt-micro"])


def test_a_trainer_with_switches_pickles_for_a_worker_process():
    import pickle

    from llmviz.training.config import TrainConfig
    from llmviz.training.trainer import Trainer

    config = TrainConfig(
        model="moe-tiny", tokenizer="char", context_length=8, batch_size=2, steps=1, architecture={"positions": "none"}
    )
    trainer = Trainer.from_text("abcdefgh ijklmnop " * 30, config)
    copy = pickle.loads(pickle.dumps(trainer))
    assert copy.model.config == trainer.model.config and copy.model.config.positions == "none"


@pytest.mark.parametrize(
    "change, words",
    [
        ({"n_experts": 100_000}, "n_experts = 100000"),
        ({"d_mlp": 10**7}, "d_mlp = 10000000"),
        ({"n_experts": 256, "d_mlp": 65_536, "d_model": 4096, "n_layers": 64}, "parameters, more than llmviz loads"),
    ],
)
def test_a_described_mixture_of_experts_too_big_to_load_is_refused(change, words):
    from llmviz.training.checkpoint import _described_shapes

    description = {"kind": "gpt", "config": {**tiny().to_dict(), **change}}
    with pytest.raises(ConfigError, match=words):
        _described_shapes(description)
