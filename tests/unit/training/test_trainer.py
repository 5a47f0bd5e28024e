"""llmviz.training.trainer: training, resuming, checkpoints, bad configs and divergence advice; the CLI's train
and sample."""

import hashlib
import json
import math

import pytest
import torch

from llmviz.data import corpus
from llmviz.errors import CheckpointError, ConfigError, TrainingDiverged
from llmviz.training.checkpoint import load_checkpoint
from llmviz.training.config import TrainConfig
from llmviz.training.safetensors_file import read_safetensors
from llmviz.training.trainer import Trainer, learning_rate, resume
from tests.support.paths import ROOT

NAMES = corpus.load("names")[:6000]


def small(**changes):
    base = dict(
        model="gpt-nano",
        tokenizer="char",
        context_length=16,
        batch_size=8,
        steps=40,
        lr=1e-2,
        warmup_steps=5,
        eval_interval=10,
        eval_batches=2,
        seed=3,
    )
    return TrainConfig(**{**base, **changes})


def test_loss_falls_within_a_few_dozen_steps():
    trainer = Trainer.from_text(NAMES, small(steps=60))
    history = list(trainer.run())
    first = sum(m.train_loss for m in history[:5]) / 5
    last = sum(m.train_loss for m in history[-5:]) / 5
    assert last < first - 0.5
    assert history[-1].val_loss is not None
    assert history[0].perplexity == pytest.approx(math.exp(history[0].train_loss))


def test_runs_repeat_exactly_with_the_same_seed():
    a = [m.train_loss for m in Trainer.from_text(NAMES, small(steps=10)).run()]
    b = [m.train_loss for m in Trainer.from_text(NAMES, small(steps=10)).run()]
    assert a == b


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adagrad", "rmsprop", "adam", "adamw"])
def test_every_optimizer_trains(optimizer):
    lr = {"sgd": 0.5, "momentum": 0.1}.get(optimizer, 1e-2)
    history = list(Trainer.from_text(NAMES, small(optimizer=optimizer, lr=lr, steps=30)).run())
    assert history[-1].train_loss < history[0].train_loss


def test_resumed_run_continues_exactly(tmp_path):
    config = small(steps=30)
    full = [m.train_loss for m in Trainer.from_text(NAMES, config).run()]
    first = Trainer.from_text(NAMES, config)
    for _ in first.run(steps=15):
        pass
    first.save(tmp_path / "ck")
    resumed = resume(tmp_path / "ck", NAMES)
    rest = [m.train_loss for m in resumed.run()]
    assert resumed.step == 30
    assert rest == full[15:]


def test_a_run_goes_on_exactly_from_its_training_state_kept_as_safetensors_and_json(tmp_path):
    """Trainer.training_state / load_training_state (what the lab keeps beside a snapshot, llmviz.lab.storage):
    written and read back, a fresh trainer with the snapshot's weights takes the same steps as the run that never
    stopped (dropout, AdamW, warmup and cosine), with its metrics so far; one that did not load it does not."""
    from llmviz.lab.storage import Storage
    from llmviz.training.snapshots import state_of

    config = small(steps=30, dropout=0.1)
    full = list(Trainer.from_text(NAMES, config).run())
    first = Trainer.from_text(NAMES, config)
    list(first.run(steps=12))
    storage = Storage(tmp_path)
    weights = state_of(first.model)
    path, _ = storage.write_resume("s1", "r1", 12, *first.training_state())
    tensors, scalars = storage.read_resume(path)
    assert scalars["step"] == 12 and any(name.endswith(".exp_avg_sq") for name in tensors)
    resumed = Trainer.from_text(NAMES, config)
    resumed.model.load_state_dict(weights)
    resumed.load_training_state(tensors, scalars)
    assert resumed.step == 12 and resumed.history == first.history  # every field, times included
    assert list(resumed.run()) != [] and [m.train_loss for m in resumed.history] == [m.train_loss for m in full]
    weights_only = Trainer.from_text(NAMES, config)  # the old resume: the weights, the step, nothing else
    weights_only.model.load_state_dict(weights)
    weights_only.step = 12
    assert [m.train_loss for m in weights_only.run()] != [m.train_loss for m in full[12:]]


def test_checkpoint_round_trip(tmp_path):
    trainer = Trainer.from_text(NAMES, small(steps=5))
    list(trainer.run())
    trainer.save(tmp_path / "ck")
    model, tokenizer, meta = load_checkpoint(tmp_path / "ck")
    idx = torch.tensor([tokenizer.encode("anna")])
    trainer.model.eval()
    torch.testing.assert_close(model(idx)[0], trainer.model(idx)[0])
    assert meta["step"] == 5


def test_pickle_checkpoint_is_refused(tmp_path):
    trainer = Trainer.from_text(NAMES, small(steps=1))
    trainer.save(tmp_path / "ck")
    torch.save(trainer.model.state_dict(), tmp_path / "ck" / "model.safetensors")  # a pickle under the right name
    with pytest.raises(CheckpointError, match="pickle"):
        load_checkpoint(tmp_path / "ck")


def test_truncated_checkpoint_is_refused(tmp_path):
    trainer = Trainer.from_text(NAMES, small(steps=1))
    trainer.save(tmp_path / "ck")
    path = tmp_path / "ck" / "model.safetensors"
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(CheckpointError, match="truncated or corrupted"):
        load_checkpoint(tmp_path / "ck")


def test_corrupted_checkpoint_is_refused(tmp_path):
    path = tmp_path / "x.safetensors"
    path.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    with pytest.raises(CheckpointError):
        read_safetensors(path)


def test_mismatched_checkpoint_is_refused(tmp_path):
    import json

    trainer = Trainer.from_text(NAMES, small(steps=1))
    trainer.save(tmp_path / "ck")
    meta_path = tmp_path / "ck" / "checkpoint.json"
    meta = json.loads(meta_path.read_text())
    meta["model"]["config"]["d_model"] = 64
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="do not match"):
        load_checkpoint(tmp_path / "ck")


def test_text_shorter_than_one_window_is_a_clear_error():
    with pytest.raises(ConfigError, match="one window needs"):
        Trainer.from_text("abc\n", small())


def test_empty_text_is_a_clear_error():
    with pytest.raises(ConfigError, match="no text"):
        Trainer.from_text("   ", small())


def test_nan_loss_stops_with_advice():
    trainer = Trainer.from_text(NAMES, small(optimizer="sgd", lr=1e6, grad_clip=None, steps=50))
    with pytest.raises(TrainingDiverged, match="learning rate"):
        list(trainer.run())


def test_bad_config_messages():
    with pytest.raises(ConfigError, match="learning rate"):
        small(lr=-1)
    with pytest.raises(ConfigError, match="model must be one of"):
        small(model="gpt-9000")


def test_warmup_and_cosine():
    config = small(lr=1.0, warmup_steps=4, steps=14)
    rates = [learning_rate(config, s) for s in range(15)]
    assert rates[:4] == [0.25, 0.5, 0.75, 1.0]
    assert rates[4] == pytest.approx(1.0)
    assert rates[9] == pytest.approx(0.1 + 0.45 * (1 + math.cos(math.pi * 0.5)))
    assert rates[14] == pytest.approx(0.1)


def test_counting_bigram_trains_by_counting():
    trainer = Trainer.from_text(NAMES, small(model="bigram-counts", steps=20))
    history = list(trainer.run())
    assert trainer.model.counts.sum() == 20 * 8 * 16
    assert history[-1].grad_norm == 0.0


def test_stop_between_steps():
    trainer = Trainer.from_text(NAMES, small(steps=100))
    seen = []
    for m in trainer.run(should_stop=lambda: len(seen) >= 3):
        seen.append(m.step)
    assert seen == [1, 2, 3] and trainer.step == 3


def test_bpe_gpt_trains(tmp_path):
    text = corpus.load("python-docs")[:30000]
    trainer = Trainer.from_text(text, small(tokenizer="bpe", bpe_vocab_size=300, steps=20))
    history = list(trainer.run())
    assert history[-1].train_loss < history[0].train_loss
    trainer.save(tmp_path / "ck")
    _, tokenizer, _ = load_checkpoint(tmp_path / "ck")
    assert tokenizer.encode("def f(x):") == trainer.dataset.tokenizer.encode("def f(x):")


def test_cli_train_and_sample(tmp_path, capsys):
    from llmviz.cli.main import main

    out = tmp_path / "ck"
    assert (
        main(
            [
                "train",
                "--corpus",
                "names",
                "--model",
                "mlp",
                "--context",
                "8",
                "--steps",
                "5",
                "--eval-interval",
                "5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert (out / "model.safetensors").exists()
    meta = json.loads((out / "checkpoint.json").read_text())  # which text the recorded losses belong to
    assert meta["corpus_sha256"] == hashlib.sha256(corpus.load("names").encode("utf-8")).hexdigest()
    assert main(["sample", "--checkpoint", str(out), "--tokens", "20", "--prompt", "an"]) == 0
    assert capsys.readouterr().out.strip()


def test_single_file_export_loads_back(tmp_path):
    from llmviz.training.checkpoint import checkpoint_file_bytes

    trainer = Trainer.from_text(NAMES, small(steps=3))
    list(trainer.run())
    path = tmp_path / "model.safetensors"
    path.write_bytes(checkpoint_file_bytes(trainer))
    model, tokenizer, meta = load_checkpoint(path)
    idx = torch.tensor([tokenizer.encode("emma")])
    trainer.model.eval()
    torch.testing.assert_close(model(idx)[0], trainer.model(idx)[0])
    assert meta["step"] == 3


def test_foreign_safetensors_is_refused(tmp_path):
    from safetensors.torch import save_file

    path = tmp_path / "other.safetensors"
    save_file({"w": torch.zeros(2)}, str(path))
    with pytest.raises(CheckpointError, match="not one llmviz wrote"):
        load_checkpoint(path)


def test_safetensors_whose_header_length_looks_like_a_pickle_opcode(tmp_path):
    """A header of 640 bytes is stored as 80 02 00 …, the same first bytes as a protocol-2 pickle."""
    import json
    import struct

    from safetensors.torch import save

    data = save({"w": torch.arange(4.0)})
    length = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + length])
    header["__metadata__"] = {"pad": ""}
    raw = json.dumps(header, separators=(",", ":"))
    raw = raw.replace('"pad":""', '"pad":"' + "x" * (640 - len(raw)) + '"')
    rebuilt = struct.pack("<Q", 640) + raw.encode() + data[8 + length :]
    assert rebuilt[:2] == b"\x80\x02"
    path = tmp_path / "m.safetensors"
    path.write_bytes(rebuilt)
    assert torch.equal(read_safetensors(path)["w"], torch.arange(4.0))


def test_adamw_decays_only_matrices_as_nanogpt_does():
    trainer = Trainer.from_text(NAMES, small(optimizer="adamw", lr=0.1, weight_decay=0.5, steps=1, warmup_steps=0))
    model, optimizer = trainer.model, trainer.optimizer
    decayed = {id(p) for g in optimizer.param_groups if g["weight_decay"] == 0.5 for p in g["params"]}
    plain = {id(p) for g in optimizer.param_groups if g["weight_decay"] == 0.0 for p in g["params"]}
    for name, parameter in model.named_parameters():
        # nanoGPT's rule: weight matrices and embeddings decay; biases and LayerNorm scales/shifts do not
        is_matrix = name.endswith(".weight")  # tok_emb, pos_emb, qkv, proj, fc, lm_head (LayerNorm: scale, shift)
        assert (id(parameter) in decayed) == is_matrix, name
        assert (id(parameter) in plain) == (not is_matrix), name
    # one AdamW step with zero gradients changes only the decayed weights: p ← p − lr·wd·p (Loshchilov & Hutter)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    for name, parameter in model.named_parameters():
        expected = before[name] * (1 - 0.1 * 0.5) if id(parameter) in decayed else before[name]
        torch.testing.assert_close(parameter.detach(), expected, rtol=1e-6, atol=1e-7)
    assert torch.equal(model.ln_f.scale.detach(), torch.ones_like(model.ln_f.scale))


def test_resume_restores_the_cuda_random_state(tmp_path, monkeypatch):
    generator = {"state": torch.arange(16, dtype=torch.uint8)}  # a stand-in for the CUDA generator
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state", lambda device="cuda": generator["state"].clone())
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device="cuda": generator.update(state=state.clone()))
    trainer = Trainer.from_text(NAMES, small(steps=3))
    list(trainer.run())
    trainer.save(tmp_path / "ck")
    saved = generator["state"].clone()
    assert torch.equal(read_safetensors(tmp_path / "ck" / "trainer.safetensors")["rng.cuda"], saved)
    generator["state"] = torch.zeros(16, dtype=torch.uint8)  # the generator moved on
    resume(tmp_path / "ck", NAMES)
    assert torch.equal(generator["state"], saved)


@pytest.mark.parametrize("optimizer, lr", [("adam", 1e6), ("sgd", 1e6)])
def test_divergence_advice_fits_the_optimizer(optimizer, lr):
    trainer = Trainer.from_text(NAMES, small(optimizer=optimizer, lr=lr, grad_clip=None, steps=50, warmup_steps=0))
    with pytest.raises(TrainingDiverged) as raised:
        list(trainer.run())
    message = str(raised.value)
    assert "Lower the learning rate" in message and "gradient clipping" in message
    assert ("instead of" in message) is (optimizer == "sgd")
    assert "instead of Adam" not in message


def test_cli_sample_says_which_prompt_characters_were_dropped(capsys):

    from llmviz.cli.main import main

    shipped = ROOT / "data" / "names-mlp"
    assert main(["sample", "--checkpoint", str(shipped), "--tokens", "10", "--prompt", "Zoë!"]) == 0
    captured = capsys.readouterr()
    assert "'Z'" in captured.err and "'ë'" in captured.err and "'!'" in captured.err  # names are lower-case a–z
    assert captured.out.startswith("o") and "Z" not in captured.out
