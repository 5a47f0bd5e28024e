"""llmviz's GPT with Llama's switches computes exactly what transformers' Llama, Qwen2 and Mixtral compute.

The reference is ``transformers``: small random models are saved with ``save_pretrained``,
loaded into llmviz's GPT by :mod:`llmviz.hub.llama`, and logits, loss, attention patterns,
router choices and greedy generations (with and without the KV cache) are compared, as
tests/unit/hub/test_gpt2.py does for GPT-2.
"""

from __future__ import annotations

import pytest
import torch

from llmviz.errors import CheckpointError, ConfigError
from llmviz.generation.sampling import generate
from llmviz.hub import llama
from llmviz.hub.download import HubUnavailable
from llmviz.models.gpt import GPT
from tests.support.gpt2 import save_as_cached_repo

VOCAB = 300
SHAPE = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    max_position_embeddings=64,
)
FAMILIES = {
    # Llama with grouped-query attention (2 key/value heads for 4 query heads), untied head
    "llama-gqa": ("llama", dict(num_key_value_heads=2, rope_theta=10000.0, rms_norm_eps=1e-5)),
    # SmolLM2's choices: a tied head; here multi-query attention (1 key/value head), θ = 100,000
    "llama-mqa-tied": ("llama", dict(num_key_value_heads=1, rope_theta=100000.0, tie_word_embeddings=True)),
    # Qwen2: biases in W_Q, W_K, W_V, θ = 1,000,000, ε = 1e-6
    "qwen2": ("qwen2", dict(num_key_value_heads=2, rope_theta=1_000_000.0, rms_norm_eps=1e-6)),
    # Mixtral: 4 experts, each token routed to 2, load-balancing coefficient 0.02
    "mixtral": (
        "mixtral",
        dict(num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, router_aux_loss_coef=0.02),
    ),
}


def make_hf_model(family: str, seed: int = 0, **changes):
    """A transformers causal LM of ``family`` with every weight random (norm scales near 1), eager attention."""
    import transformers

    kind, extra = FAMILIES[family]
    config_class, model_class = {
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
        "mixtral": (transformers.MixtralConfig, transformers.MixtralForCausalLM),
    }[kind]
    settings = {**SHAPE, **extra, **changes}
    theta = settings.pop("rope_theta") if "rope_theta" in settings else None
    config = config_class(**settings)
    if theta is not None:
        config.rope_parameters = {"rope_type": "default", "rope_theta": theta}
    config._attn_implementation = "eager"  # output_attentions needs the explicit softmax
    torch.manual_seed(seed)
    model = model_class(config).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            parameter.copy_(1.0 + 0.1 * noise if name.endswith("norm.weight") else 0.15 * noise)
    return model


@pytest.fixture(scope="module", params=list(FAMILIES))
def pair(request, tmp_path_factory):
    """(family, transformers model, llmviz model loaded from its save_pretrained folder, folder)."""
    reference = make_hf_model(request.param)
    folder = tmp_path_factory.mktemp(request.param)
    reference.save_pretrained(folder)
    return request.param, reference, llama.load_hf_causal_lm(folder), folder


@pytest.fixture(scope="module")
def ids():
    return torch.randint(0, VOCAB, (2, 24), generator=torch.Generator().manual_seed(1))  # (B, T)


def test_switches_read_from_the_config(pair):
    family, reference, ours, _ = pair
    c = ours.config
    assert (c.positions, c.norm, c.mlp_kind) == ("rope", "rmsnorm", "swiglu")
    assert c.kv_heads == reference.config.num_key_value_heads
    assert c.rope_theta == reference.config.rope_parameters["rope_theta"]
    assert c.qkv_bias == (family == "qwen2") and not c.bias
    assert c.tie_weights == (family == "llama-mqa-tied")
    assert c.n_experts == (4 if family == "mixtral" else 0)


def test_logits_equal(pair, ids):
    _, reference, ours, _ = pair
    with torch.no_grad():
        expected = reference(ids).logits
        logits, _ = ours(ids)
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=0)
    assert logits.abs().max() > 1.0  # the random weights give logits far from zero: the check has teeth


def test_loss_equal(pair, ids):
    family, reference, ours, _ = pair
    with torch.no_grad():
        expected = reference(ids, labels=ids).loss  # transformers shifts the labels by one itself
        _, loss = ours(ids[:, :-1], ids[:, 1:])
    torch.testing.assert_close(loss, expected, atol=1e-5, rtol=0)


@pytest.fixture(scope="module")
def mixtral(tmp_path_factory):
    reference = make_hf_model("mixtral")
    folder = tmp_path_factory.mktemp("mixtral")
    reference.save_pretrained(folder)
    return reference, llama.load_hf_causal_lm(folder)


def test_mixtral_router_and_load_balancing_loss_equal(mixtral, ids):
    reference, ours = mixtral
    with torch.no_grad():
        out = reference(ids, labels=ids, output_router_logits=True)
    _, _, cache = ours.run_with_cache(ids)
    for layer in range(2):
        torch.testing.assert_close(
            cache[f"blocks.{layer}.mlp.router_logits"].reshape(-1, 4), out.router_logits[layer], atol=1e-5, rtol=0
        )
    torch.testing.assert_close(cache["aux_loss"], out.aux_loss, atol=1e-6, rtol=0)
    ours.train()  # the training loss adds coefficient × balancing loss, as transformers' loss does
    try:
        with torch.no_grad():
            _, training_loss = ours(ids[:, :-1], ids[:, 1:])
            out_shifted = reference(ids, labels=ids, output_router_logits=True)
        # transformers computes the balancing loss over all 24 positions, ours over the 23 inputs
        _, _, shifted_cache = ours.run_with_cache(ids[:, :-1])
        expected = out_shifted.loss - 0.02 * out_shifted.aux_loss + 0.02 * shifted_cache["aux_loss"]
        torch.testing.assert_close(training_loss, expected, atol=1e-5, rtol=0)
    finally:
        ours.eval()
    experts = cache["blocks.0.mlp.experts"]  # (B, T, 2)
    assert len(experts.unique()) > 1  # tokens go to different experts


def test_attention_patterns_equal(pair, ids):
    _, reference, ours, _ = pair
    with torch.no_grad():
        attentions = reference(ids, output_attentions=True).attentions
    logits, _, cache = ours.run_with_cache(ids)
    for layer in range(2):
        torch.testing.assert_close(cache[f"blocks.{layer}.attn.pattern"], attentions[layer], atol=1e-5, rtol=0)
    assert not torch.allclose(cache["blocks.0.attn.pattern"][0, 0], cache["blocks.0.attn.pattern"][0, 1])
    with torch.no_grad():
        torch.testing.assert_close(logits, reference(ids).logits, atol=1e-5, rtol=0)  # the recorded path too


@pytest.mark.parametrize("use_kv_cache", [True, False])
def test_greedy_generation_equal(pair, use_kv_cache):
    _, reference, ours, _ = pair
    prompt = [5, 17, 200, 42, 299, 7]
    with torch.no_grad():
        expected = reference.generate(
            torch.tensor([prompt]), max_new_tokens=20, do_sample=False, eos_token_id=None, pad_token_id=0
        )[0, len(prompt) :].tolist()
    tokens = [r.token for r in generate(ours, prompt, max_new_tokens=20, temperature=0.0, use_kv_cache=use_kv_cache)]
    assert tokens == expected
    assert len(set(tokens)) > 3  # not one token repeated


def test_kv_cache_keeps_only_the_key_value_heads(pair, ids):
    _, reference, ours, _ = pair
    _, past = ours.forward_with_kv_cache(ids[:, :10])
    with torch.no_grad():
        hf_past = reference(ids[:, :10], use_cache=True).past_key_values
    key, value = past[0]
    assert key.shape == (2, reference.config.num_key_value_heads, 10, 16)
    torch.testing.assert_close(key, hf_past.layers[0].keys, atol=1e-5, rtol=0)  # rotated keys, like transformers'
    torch.testing.assert_close(value, hf_past.layers[0].values, atol=1e-5, rtol=0)


def test_parameter_count_equal(pair):
    _, reference, ours, _ = pair
    assert ours.num_parameters() == reference.num_parameters()


def test_config_round_trip(pair):
    _, reference, ours, folder = pair
    again = llama.config_from_hf(llama.config_to_hf(ours.config))
    assert again == ours.config


def test_unsupported_checkpoints_are_refused_with_the_reason(tmp_path):
    base = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4}
    with pytest.raises(ConfigError, match="'bert' model"):
        llama.config_from_hf({"model_type": "bert"})
    with pytest.raises(ConfigError, match="'linear'-scaled"):
        llama.config_from_hf({**base, "rope_scaling": {"type": "linear", "factor": 2.0}})
    with pytest.raises(ConfigError, match="activation is 'gelu'"):
        llama.config_from_hf({**base, "hidden_act": "gelu"})
    with pytest.raises(ConfigError, match="head_dim is 32"):
        llama.config_from_hf({**base, "head_dim": 32})
    with pytest.raises(CheckpointError, match="no config.json"):
        llama.load_hf_causal_lm(tmp_path)


def test_missing_weights_are_a_clear_error(tmp_path):
    from safetensors.torch import load_file, save_file

    make_hf_model("llama-gqa").save_pretrained(tmp_path)
    state = load_file(tmp_path / "model.safetensors")
    del state["model.layers.1.self_attn.k_proj.weight"]
    save_file(state, tmp_path / "model.safetensors")
    with pytest.raises(CheckpointError, match="lacks one of q_proj, k_proj, v_proj"):
        llama.load_hf_causal_lm(tmp_path)


def test_fused_expert_tensors_are_split_per_expert():
    """transformers 5 holds Mixtral's experts as (E, 2F, C) and (E, C, F) tensors: both layouts load."""
    reference = make_hf_model("mixtral")
    fused = reference.state_dict()  # in memory: model.layers.i.mlp.experts.gate_up_proj etc.
    assert any(name.endswith("mlp.experts.gate_up_proj") for name in fused)
    ours = GPT(llama.config_from_hf(reference.config.to_dict()))
    ours.load_state_dict(llama.hf_state_to_llmviz(fused, ours.config))
    ids = torch.randint(0, VOCAB, (1, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(ours.eval()(ids)[0], reference(ids).logits, atol=1e-5, rtol=0)


# ---------------------------------------------------------------------------- the Hub cache, offline


def write_tokenizer(folder, vocab_size: int = VOCAB) -> None:
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(
        ["Every effort moves you forward, one small step at a time."] * 20,
        vocab_size=vocab_size,
        min_frequency=1,
        show_progress=False,
    )
    tokenizer.save(str(folder / "tokenizer.json"))


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An empty huggingface_hub cache, with HF_HUB_OFFLINE=1."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "hub"


def test_not_cached_offline_says_how_to_get_it(hub_cache):
    assert llama.FILES.cached_folder(llama.DEFAULT_MODEL) is None
    with pytest.raises(HubUnavailable, match="python -m llmviz hf download HuggingFaceTB/SmolLM2-135M"):
        llama.load()
    with pytest.raises(HubUnavailable, match="HF_HUB_OFFLINE"):
        llama.load(allow_download=True)
    with pytest.raises(HubUnavailable, match="neither a folder"):
        llama.load("/no/such/folder")


def test_loads_from_the_hub_cache_with_its_tokenizer(hub_cache):
    reference = make_hf_model("llama-mqa-tied", seed=4)
    snapshot = save_as_cached_repo(reference, hub_cache, llama.DEFAULT_MODEL)
    assert llama.FILES.cached_folder(llama.DEFAULT_MODEL) is None  # no tokenizer.json yet
    write_tokenizer(snapshot)
    assert llama.FILES.cached_folder(llama.DEFAULT_MODEL) == snapshot
    model, tokenizer, meta = llama.load()
    text = "Every effort moves you"
    prompt = tokenizer.encode(text)
    assert tokenizer.decode(prompt) == text
    assert b"".join(tokenizer.token_bytes(i) for i in prompt) == text.encode()
    with torch.no_grad():
        torch.testing.assert_close(
            model(torch.tensor([prompt]))[0], reference(torch.tensor([prompt])).logits, atol=1e-5, rtol=0
        )
    assert meta["title"] == "SmolLM2 135M" and meta["family"] == "llama"
    assert meta["parameters"] == reference.num_parameters()
    assert llama.FILES.download(llama.DEFAULT_MODEL) == snapshot  # already cached: nothing to fetch, even offline


def test_cli_hf_download_offline(hub_cache, capsys):
    from llmviz.cli.main import main

    assert main(["hf", "download", "HuggingFaceTB/SmolLM2-135M"]) != 0
    assert "HF_HUB_OFFLINE" in capsys.readouterr().err
