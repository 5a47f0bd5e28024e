"""llmviz's GPT computes exactly what Hugging Face's GPT2LMHeadModel computes (issue 17).

The reference is ``transformers``: a small random GPT-2 saved with ``save_pretrained`` is
loaded into llmviz's GPT by :mod:`llmviz.hub.gpt2`, and logits, loss, attention patterns,
greedy generations (with and without the KV cache) and parameter counts are compared.
"""

import pytest
import torch

from llmviz.errors import CheckpointError, ConfigError
from llmviz.generation.sampling import generate
from llmviz.hub import download, gpt2
from llmviz.hub.download import HubUnavailable
from llmviz.models.gpt import count_parameters_without_building
from tests.support.gpt2 import make_hf_gpt2, save_as_cached_repo
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(Hugging Face model, llmviz model loaded from its save_pretrained folder, folder)."""
    reference = make_hf_gpt2()
    folder = tmp_path_factory.mktemp("tiny-gpt2")
    reference.save_pretrained(folder)
    assert (folder / "model.safetensors").exists()
    return reference, gpt2.gpt_from_folder(folder), folder


@pytest.fixture(scope="module")
def ids():
    return torch.randint(0, 1000, (3, 40), generator=torch.Generator().manual_seed(1))  # (B, T)


def test_logits_equal(pair, ids):
    reference, ours, _ = pair
    with torch.no_grad():
        expected = reference(ids).logits
        logits, _ = ours(ids)
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=0)
    assert logits.abs().max() > 1.0  # the random weights give logits far from zero: the check has teeth


def test_loss_equal(pair, ids):
    reference, ours, _ = pair
    with torch.no_grad():
        expected = reference(ids, labels=ids).loss  # transformers shifts the labels by one itself
        _, loss = ours(ids[:, :-1], ids[:, 1:])
    torch.testing.assert_close(loss, expected, atol=1e-5, rtol=0)


def test_attention_patterns_equal(pair, ids):
    reference, ours, _ = pair
    with torch.no_grad():
        attentions = reference(ids, output_attentions=True).attentions
    logits, _, cache = ours.run_with_cache(ids)
    for layer in range(2):
        pattern = cache[f"blocks.{layer}.attn.pattern"]  # (B, H, T, T)
        torch.testing.assert_close(pattern, attentions[layer], atol=1e-5, rtol=0)
    assert not torch.allclose(cache["blocks.0.attn.pattern"][0, 0], cache["blocks.0.attn.pattern"][0, 1])
    with torch.no_grad():
        torch.testing.assert_close(logits, reference(ids).logits, atol=1e-5, rtol=0)  # the recorded path too


@pytest.mark.parametrize("use_kv_cache", [True, False])
def test_greedy_generation_equal(pair, use_kv_cache):
    reference, ours, _ = pair
    prompt = [5, 17, 300, 42, 999, 7]
    with torch.no_grad():
        expected = reference.generate(
            torch.tensor([prompt]), max_new_tokens=30, do_sample=False, eos_token_id=None, pad_token_id=0
        )[0, len(prompt) :].tolist()
    tokens = [r.token for r in generate(ours, prompt, max_new_tokens=30, temperature=0.0, use_kv_cache=use_kv_cache)]
    assert tokens == expected
    assert len(set(tokens)) > 3  # not one token repeated


def test_tied_weight_parameter_count(pair):
    reference, ours, _ = pair
    assert ours.lm_head.weight is ours.tok_emb.weight
    expected = sum(p.numel() for p in reference.parameters())  # transformers lists the tied matrix once
    assert ours.num_parameters() == expected == reference.num_parameters()


def test_gpt2_124m_parameter_count():
    from transformers import GPT2Config, GPT2LMHeadModel

    with torch.device("meta"):
        reference = GPT2LMHeadModel(GPT2Config())  # the 124M configuration, shapes only
    config = gpt2.config_from_hf(GPT2Config().to_dict())
    assert config.context_length == 1024 and config.vocab_size == 50257 and config.tie_weights and config.qkv_bias
    ours = sum(count_parameters_without_building(config).values())
    assert ours == reference.num_parameters() == 124_439_808


def test_pytorch_bin_is_read_weights_only(pair, tmp_path, ids):
    reference, ours, folder = pair
    (tmp_path / "config.json").write_text((folder / "config.json").read_text())
    torch.save(reference.state_dict(), tmp_path / "pytorch_model.bin")
    loaded = gpt2.gpt_from_folder(tmp_path)
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids)[0], ours(ids)[0], atol=0, rtol=0)


class NotATensor:
    pass


def test_pytorch_bin_with_code_is_refused(pair, tmp_path):
    _, _, folder = pair
    (tmp_path / "config.json").write_text((folder / "config.json").read_text())
    torch.save({"wte.weight": NotATensor()}, tmp_path / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="not a plain weights file"):
        gpt2.gpt_from_folder(tmp_path)


def test_pickle_named_safetensors_is_refused(pair, tmp_path):
    _, _, folder = pair
    (tmp_path / "config.json").write_text((folder / "config.json").read_text())
    torch.save({"x": torch.zeros(1)}, tmp_path / "model.safetensors")
    with pytest.raises(CheckpointError, match="pickle"):
        gpt2.gpt_from_folder(tmp_path)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"activation_function": "relu"}, "activation"),
        ({"layer_norm_epsilon": 1e-6}, "epsilon"),
        ({"n_inner": 100}, "MLP"),
        ({"model_type": "llama"}, "not GPT-2"),
    ],
)
def test_configs_that_differ_from_gpt2_are_refused(change, message):
    with pytest.raises(ConfigError, match=message):
        gpt2.config_from_hf({"n_embd": 64, "n_head": 4, **change})


def test_missing_or_mismatched_weights_are_clear_errors(pair, tmp_path):
    _, _, folder = pair
    with pytest.raises(CheckpointError, match="no config.json"):
        gpt2.gpt_from_folder(tmp_path)
    (tmp_path / "config.json").write_text((folder / "config.json").read_text().replace('"n_layer": 2', '"n_layer": 3'))
    (tmp_path / "model.safetensors").write_bytes((folder / "model.safetensors").read_bytes())
    with pytest.raises(CheckpointError, match="do not match"):
        gpt2.gpt_from_folder(tmp_path)


# ---------------------------------------------------------------------------- the Hub cache, offline


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An empty huggingface_hub cache, with HF_HUB_OFFLINE=1."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "hub"


def test_not_cached_offline_says_how_to_get_it(hub_cache):
    assert not gpt2.FILES.is_cached("gpt2")
    assert download.hub_offline()
    with pytest.raises(HubUnavailable, match="python -m llmviz gpt2 download gpt2"):
        gpt2.load("gpt2")
    with pytest.raises(HubUnavailable, match="HF_HUB_OFFLINE"):
        gpt2.load("gpt2", allow_download=True)


def test_loads_from_the_hub_cache(hub_cache):
    reference = make_hf_gpt2(vocab_size=50257, n_embd=32, n_head=2, n_positions=64)
    snapshot = save_as_cached_repo(reference, hub_cache, "gpt2")
    assert gpt2.FILES.is_cached("gpt2") and gpt2.FILES.cached_folder("gpt2") == snapshot
    assert not gpt2.FILES.is_cached("gpt2-medium")
    model, tokenizer, meta = gpt2.load("gpt2")
    prompt = tokenizer.encode("Every effort moves you")
    assert prompt == [6109, 3626, 6100, 345]  # GPT-2's ids for the sentence (tiktoken's gpt2 encoding)
    with torch.no_grad():
        torch.testing.assert_close(
            model(torch.tensor([prompt]))[0], reference(torch.tensor([prompt])).logits, atol=1e-5, rtol=0
        )
    assert meta["title"] == "GPT-2 small (124M)" and meta["parameters"] == reference.num_parameters()
    assert gpt2.FILES.download("gpt2") == snapshot  # already cached: nothing to fetch, even offline


def test_a_local_folder_needs_gpt2s_vocabulary(pair):
    _, _, folder = pair
    with pytest.raises(CheckpointError, match="vocabulary of 1,000"):
        gpt2.load(folder)


def test_not_a_repo_id_nor_a_folder(hub_cache):
    with pytest.raises(HubUnavailable):
        gpt2.load("/no/such/folder")


# ---------------------------------------------------------------------------- command line, on a tiny cached GPT-2


@pytest.fixture(scope="module")
def tiny_cache(tmp_path_factory):
    """A huggingface_hub cache holding a tiny random GPT-2 with GPT-2's vocabulary under the id gpt2."""
    root = tmp_path_factory.mktemp("hub")
    reference = make_hf_gpt2(vocab_size=50257, n_embd=32, n_head=2, n_positions=64, seed=3)
    save_as_cached_repo(reference, root, "gpt2")
    return root, reference


@pytest.fixture
def cached_gpt2(tiny_cache, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tiny_cache[0]))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tiny_cache[1]


def test_cli_sample_gpt2_matches_transformers(cached_gpt2, capsys):
    from llmviz.cli import main

    assert (
        main.main(
            ["sample", "--model", "gpt2", "--prompt", "Every effort moves you", "--tokens", "8", "--temperature", "0"]
        )
        == 0
    )
    printed = capsys.readouterr().out.strip()
    prompt = torch.tensor([[6109, 3626, 6100, 345]])
    with torch.no_grad():
        expected = cached_gpt2.generate(prompt, max_new_tokens=8, do_sample=False, eos_token_id=None, pad_token_id=0)[
            0, 4:
        ].tolist()
    assert printed == "Every effort moves you" + gpt2.gpt2_tokenizer().decode(expected)


def test_cli_gpt2_status_and_download_offline(cached_gpt2, capsys, monkeypatch, tmp_path):
    from huggingface_hub import constants

    from llmviz.cli import main

    assert main.main(["gpt2", "status"]) == 0
    out = capsys.readouterr().out
    assert "gpt2 " in out and "cached" in out and "not downloaded (1.5 GB)" in out and "HF_HUB_OFFLINE" in out
    assert main.main(["gpt2", "download"]) == 0
    assert "already in the cache" in capsys.readouterr().out
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))  # an empty cache, offline
    assert main.main(["gpt2", "download", "gpt2"]) == 2
    assert "HF_HUB_OFFLINE" in capsys.readouterr().err


def test_cli_fine_tunes_gpt2_on_the_users_text(cached_gpt2, tmp_path, capsys):
    import json

    from llmviz.cli import main
    from llmviz.training.checkpoint import load_checkpoint

    corpus = tmp_path / "my.txt"
    corpus.write_text("Every effort moves you forward, and every step counts. " * 40, encoding="utf-8")
    out = tmp_path / "tuned"
    assert (
        main.main(
            [
                "train",
                "--init",
                "gpt2",
                "--corpus",
                str(corpus),
                "--steps",
                "4",
                "--context",
                "32",
                "--batch",
                "4",
                "--lr",
                "3e-3",
                "--eval-interval",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["step"] == 4
    model, tokenizer, meta = load_checkpoint(out)
    assert tokenizer.encode("Every effort moves you") == [6109, 3626, 6100, 345]  # GPT-2's tokenizer was kept
    assert model.config.tie_weights and model.config.qkv_bias and model.config.context_length == 64
    assert meta["train_config"]["init"] == "gpt2"
    original, _, _ = gpt2.load("gpt2")
    assert not torch.equal(model.tok_emb.weight, original.tok_emb.weight)  # trained …
    assert model.lm_head.weight is model.tok_emb.weight  # … and still tied
    history = meta["metrics"]
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    assert main.main(["sample", "--checkpoint", str(out), "--prompt", "Every effort", "--tokens", "3"]) == 0


def test_fine_tuning_never_changes_the_model_it_starts_from(cached_gpt2):
    from llmviz.training.config import TrainConfig
    from llmviz.training.trainer import Trainer

    model, tokenizer, _ = gpt2.load("gpt2")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    config = TrainConfig(init="gpt2", context_length=16, batch_size=2, steps=2, lr=1e-2, eval_interval=2)
    trainer = Trainer.from_text("Every effort moves you. " * 50, config, tokenizer=tokenizer, initial_model=model)
    list(trainer.run())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    with pytest.raises(ConfigError, match="longer than the model's context of 64"):
        Trainer.from_text(
            "Every effort moves you. " * 500,
            config.replace(context_length=65),
            tokenizer=tokenizer,
            initial_model=model,
        )


def test_fine_tuning_the_shipped_gpt(tmp_path):

    from llmviz.training.checkpoint import load_checkpoint
    from llmviz.training.config import TrainConfig
    from llmviz.training.trainer import Trainer

    shipped = ROOT / "data" / "gpt-python-docs"
    model, tokenizer, _ = load_checkpoint(shipped)
    config = TrainConfig(init=str(shipped), context_length=32, batch_size=2, steps=2, eval_interval=2)
    trainer = Trainer.from_text("def f(x):\n    return x + 1\n" * 60, config)
    assert trainer.dataset.tokenizer.to_dict() == tokenizer.to_dict()
    torch.testing.assert_close(trainer.model.tok_emb.weight, model.tok_emb.weight)  # starts from the shipped weights
    list(trainer.run())
    trainer.save(tmp_path / "tuned")
    tuned, _, _ = load_checkpoint(tmp_path / "tuned")
    assert not torch.equal(tuned.tok_emb.weight, model.tok_emb.weight)


def test_export_round_trip_loads_in_transformers(pair, tmp_path):
    from transformers import GPT2LMHeadModel

    from llmviz.models.gpt import GPT

    ours = GPT(gpt2.config_from_hf({"vocab_size": 300, "n_positions": 32, "n_embd": 48, "n_head": 3, "n_layer": 2}))
    for parameter in ours.parameters():  # biases and LayerNorms non-trivial too
        torch.nn.init.normal_(parameter, std=0.2)
    ours.eval()
    gpt2.save_hf_folder(ours, tmp_path)
    reference = GPT2LMHeadModel.from_pretrained(tmp_path).eval()
    ids = torch.randint(0, 300, (2, 20), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(reference(ids).logits, ours(ids)[0], atol=1e-5, rtol=0)
        torch.testing.assert_close(gpt2.gpt_from_folder(tmp_path)(ids)[0], ours(ids)[0], atol=0, rtol=0)


def test_empty_prompt_starts_from_endoftext():
    from llmviz.generation.sampling import boundary_token

    assert boundary_token(gpt2.gpt2_tokenizer()) == ([50256], "<|endoftext|>")


def test_hub_reachable_is_quick_and_remembered(monkeypatch):
    import socket

    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(download, "_REACHABLE", {})
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
        assert download.hub_reachable() is True
    assert download.hub_reachable() is True  # remembered
    monkeypatch.setattr(download, "_REACHABLE", {})
    assert download.hub_reachable(timeout=1.0) is False  # nothing listens there now
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert download.hub_reachable() is False


def test_download_prefers_safetensors_and_falls_back_to_the_bin(monkeypatch, tmp_path):
    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.errors import EntryNotFoundError

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(download, "hub_reachable", lambda **_: True)
    asked = []

    def fake_download(repo_id, filename, **_):
        asked.append(filename)
        if filename == "model.safetensors":
            raise EntryNotFoundError("no such file")
        path = tmp_path / "files" / filename
        path.parent.mkdir(exist_ok=True)
        path.write_text("{}")
        return str(path)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    assert gpt2.FILES.download("someone/old-gpt2") == tmp_path / "files"
    assert asked == ["config.json", "model.safetensors", "pytorch_model.bin"]

    def unreachable(repo_id, filename, **_):
        raise OSError("connection reset")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", unreachable)
    with pytest.raises(HubUnavailable, match="Could not download"):
        gpt2.FILES.download("gpt2")


def test_exact_gelu_round_trips_as_transformers_gelu(tmp_path):
    """A GPT with the exact GELU (nanoGPT's) exports as activation "gelu", which transformers computes the same."""
    from transformers import GPT2LMHeadModel

    from llmviz.models.gpt import GPT

    hf = {"vocab_size": 300, "n_positions": 32, "n_embd": 48, "n_head": 3, "n_layer": 2, "activation_function": "gelu"}
    ours = GPT(gpt2.config_from_hf(hf))
    assert ours.config.gelu == "exact" and gpt2.config_from_hf({**hf, "activation_function": "gelu_new"}).gelu == "tanh"
    for parameter in ours.parameters():
        torch.nn.init.normal_(parameter, std=0.2)
    ours.eval()
    gpt2.save_hf_folder(ours, tmp_path)
    reference = GPT2LMHeadModel.from_pretrained(tmp_path).eval()
    assert reference.config.activation_function == "gelu"
    ids = torch.randint(0, 300, (2, 20), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(reference(ids).logits, ours(ids)[0], atol=1e-5, rtol=0)
        tanh = GPT(ours.config.replace(gelu="tanh"))
        tanh.load_state_dict(ours.state_dict())
        assert not torch.allclose(tanh(ids)[0], ours(ids)[0], atol=1e-5, rtol=0)  # the form is not ignored
