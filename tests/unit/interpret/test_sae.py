"""Sparse autoencoders (llmviz.interpret.sae, llmviz.interpret.features) against independent references: SAELens's
own SAE objects loaded with our weights (encode, decode, TopK sparsity, the training loss), a forward pass written out
here with the reconstruction substituted (the spliced-in loss), plain-torch derivations for the browser's numbers,
and a planted-features source whose true directions the training must find (cosine ≥ 0.9)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from llmviz.errors import ConfigError
from llmviz.interpret import features, sae
from llmviz.jobs.manager import JobManager
from llmviz.lab.live_status import JobRefused
from llmviz.training import footprint
from tests.support.interventions import ARCHITECTURES, model_of

sae_lens = pytest.importorskip("sae_lens")


def random_sae(d_in=12, d_sae=40, k=5, seed=0) -> sae.SparseAutoencoder:
    generator = torch.Generator().manual_seed(seed)
    model = sae.SparseAutoencoder(d_in, d_sae, k, generator)
    with torch.no_grad():  # every parameter away from its init, so each one is checked
        model.W_enc.copy_(torch.randn(d_in, d_sae, generator=generator))
        model.b_enc.copy_(0.3 * torch.randn(d_sae, generator=generator))
        model.b_dec.copy_(0.5 * torch.randn(d_in, generator=generator))
        model.W_dec.copy_(torch.randn(d_sae, d_in, generator=generator))
    model.normalise_decoder()
    return model


def into_sae_lens(ours: sae.SparseAutoencoder):
    """A SAELens training SAE (TopK or standard ReLU) holding our weights."""
    from sae_lens.saes.standard_sae import StandardTrainingSAE, StandardTrainingSAEConfig
    from sae_lens.saes.topk_sae import TopKTrainingSAE, TopKTrainingSAEConfig

    if ours.k:
        cfg = TopKTrainingSAEConfig(d_in=ours.d_in, d_sae=ours.d_sae, k=ours.k, rescale_acts_by_decoder_norm=False)
        theirs = TopKTrainingSAE(cfg)
    else:
        theirs = StandardTrainingSAE(StandardTrainingSAEConfig(d_in=ours.d_in, d_sae=ours.d_sae, l1_coefficient=0.1))
    theirs.load_state_dict({name: t.clone() for name, t in ours.state_dict().items()}, strict=False)
    return theirs


@pytest.mark.parametrize("k", [5, 0])
def test_encode_decode_and_loss_equal_sae_lens_with_the_same_weights(k):
    from sae_lens.saes.sae import TrainStepInput

    ours = random_sae(k=k)
    theirs = into_sae_lens(ours)
    x = torch.randn(64, ours.d_in, generator=torch.Generator().manual_seed(1))  # (N, D)
    f = ours.encode(x)
    torch.testing.assert_close(f, theirs.encode(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ours.decode(f), theirs.decode(f), atol=1e-5, rtol=1e-5)
    if k:  # TopK: at most k features per token, the same ones
        assert int((f > 0).sum(-1).max()) <= k
        assert torch.equal(f > 0, theirs.encode(x) > 0)
    l1 = 0.0 if k else 0.1
    step = TrainStepInput(x, {"l1": l1}, torch.zeros(ours.d_sae, dtype=torch.bool), 0, False)
    out = theirs.training_forward_pass(step)
    mine = ours.losses(x, l1)
    assert float(mine["mse"].detach()) == pytest.approx(float(out.losses["mse_loss"].detach()), rel=1e-5)
    assert float(mine["loss"].detach()) == pytest.approx(float(out.loss.detach()), rel=1e-5)
    if not k:
        assert float(mine["l1"].detach()) == pytest.approx(float(out.losses["l1_loss"].detach()), rel=1e-5)


def test_the_spliced_in_loss_equals_a_forward_pass_written_out_with_the_reconstruction():
    model = model_of(ARCHITECTURES["gpt2"], seed=3)
    config = sae.SaeConfig(layer=0, point="resid_post", d_sae=48, k=4, batch=8, tokens=64)
    ours = random_sae(d_in=model.config.d_model, d_sae=48, k=4)
    windows = torch.randint(0, 97, (3, 16), generator=torch.Generator().manual_seed(2))  # (W, T)
    found = sae.spliced_losses(model, ours, config.hook, windows)

    def loss(substitute):
        inputs, targets = windows[:, :-1], windows[:, 1:]
        with torch.no_grad():
            x, rope = model.embed(inputs)  # (W, T-1, C)
            for layer, block in enumerate(model.blocks):
                x, _ = block(x, None, f"blocks.{layer}", rope=rope)
                if layer == 0:
                    x = substitute(x)
            logits = model.lm_head(model.ln_f(x))  # (W, T-1, V)
        return float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)))

    assert found.clean == pytest.approx(loss(lambda x: x), abs=1e-5)
    assert found.spliced == pytest.approx(loss(lambda x: ours.decode(ours.encode(x))), abs=1e-5)
    assert found.zeroed == pytest.approx(loss(torch.zeros_like), abs=1e-5)


def planted_source(seed=0, d_in=24, planted=12, tokens=6144, active=2):
    """Activations that are sparse sums of ``planted`` known unit directions: each token mixes ``active`` of them,
    with magnitudes in [1, 2]."""
    generator = torch.Generator().manual_seed(seed)
    directions = F.normalize(torch.randn(planted, d_in, generator=generator), dim=1)  # (P, D)
    chosen = torch.rand(tokens, planted, generator=generator).argsort(dim=1)[:, :active]  # (N, active)
    weights = torch.zeros(tokens, planted).scatter_(1, chosen, 1 + torch.rand(tokens, active, generator=generator))
    return directions, weights @ directions  # (P, D), (N, D)


def test_the_initialisation_is_sae_lens_topk_trainings_in_effect():
    """SAELens's TopKTrainingSAE starts W_dec's rows at norm 0.1 (``decoder_init_norm``) and W_enc as their
    transpose; ours keeps W_dec's rows at unit length and starts W_enc as 0.1 × the transpose: the same encoder
    norms, and the same directions in encoder and decoder."""
    from sae_lens.saes.topk_sae import TopKTrainingSAE, TopKTrainingSAEConfig

    torch.manual_seed(0)
    theirs = TopKTrainingSAE(TopKTrainingSAEConfig(d_in=12, d_sae=40, k=3))
    ours = sae.SparseAutoencoder(12, 40, k=3, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(ours.W_enc.norm(dim=0), theirs.W_enc.detach().norm(dim=0))
    torch.testing.assert_close(theirs.W_dec.detach().norm(dim=1), torch.full((40,), 0.1))
    torch.testing.assert_close(ours.W_dec.norm(dim=1), torch.ones(40))
    torch.testing.assert_close(ours.W_enc.t() / ours.W_enc.norm(dim=0)[:, None], ours.W_dec.detach())


@pytest.mark.slow  # trains an autoencoder to convergence: ~8 s quiet
def test_a_small_autoencoder_recovers_planted_features():
    directions, acts = planted_source()
    config = sae.SaeConfig(d_sae=24, k=2, lr=1e-2, steps=800, batch=256, tokens=len(acts), seed=0)
    trainer = sae.SaeTrainer(config, acts, None, torch.zeros(0, 2, dtype=torch.long))
    history = trainer.train()
    cosines = directions @ trainer.model.W_dec.detach().t()  # (P, S)
    best = cosines.max(dim=1).values  # (P,) each planted direction's closest decoder row
    assert float(best.min()) >= 0.9, best
    assert history[-1].variance_explained > 0.9
    assert history[-1].l0 <= 2


def test_training_is_deterministic():
    _, acts = planted_source(tokens=1024)
    config = sae.SaeConfig(d_sae=16, k=2, steps=30, batch=64, tokens=1024, seed=4)
    runs = [sae.SaeTrainer(config, acts.clone(), None, torch.zeros(0, 2, dtype=torch.long)) for _ in range(2)]
    for run in runs:
        run.train()
    assert torch.equal(runs[0].model.W_dec, runs[1].model.W_dec)
    assert [m.mse for m in runs[0].history] == [m.mse for m in runs[1].history]


@pytest.fixture(scope="module")
def lm():
    return model_of(ARCHITECTURES["gpt2"], seed=1)


def corpus(count=2000, seed=0) -> list[int]:
    return torch.randint(0, 97, (count,), generator=torch.Generator().manual_seed(seed)).tolist()


def small_config(**values) -> sae.SaeConfig:
    base = dict(layer=1, point="resid_pre", d_sae=32, k=3, steps=12, batch=64, tokens=512, eval_every=5, eval_windows=2)
    return sae.SaeConfig(**{**base, **values})


def test_gathered_activations_are_the_cached_tensor_and_metrics_are_recorded(lm):
    config = small_config()
    trainer = sae.build_trainer(lm, corpus(), config)
    windows = sae.corpus_windows(corpus(), 16, 512)
    _, _, cache = lm.run_with_cache(windows[:4])
    torch.testing.assert_close(trainer.activations[: 4 * 16], cache[config.hook].reshape(-1, 32))
    history = trainer.train()
    assert [m.step for m in history] == list(range(1, 13))
    assert [m.step for m in history if m.spliced] == [5, 10, 12]
    last = history[-1]
    recon, _ = trainer.model(trainer.activations)
    assert 0 <= last.l0 <= 3 and 0 <= last.dead <= 32
    assert sae.variance_explained(trainer.activations, recon) < 1


def test_hostile_configs_are_refused_with_a_line(lm):
    with pytest.raises(ConfigError, match="k = 40"):
        sae.SaeConfig(d_sae=32, k=40)
    with pytest.raises(ConfigError, match="Layer 5 does not exist"):
        sae.build_trainer(lm, corpus(), small_config(layer=5))
    attention_only = model_of(ARCHITECTURES["attention-only"], seed=0)
    with pytest.raises(ConfigError, match="no mlp.hidden"):
        sae.input_width(attention_only, small_config(point="mlp.hidden"))
    with pytest.raises(ConfigError, match="MB fit"):
        sae.gather_activations(lm, sae.corpus_windows(corpus(), 16, 512), "blocks.0.resid_pre", max_bytes=1000)
    broken = model_of(ARCHITECTURES["gpt2"], seed=1)
    with torch.no_grad():
        broken.tok_emb.weight[5] = float("nan")
    with pytest.raises(ConfigError, match="NaN"):
        sae.build_trainer(broken, [5] * 600, small_config())


def test_save_load_and_a_model_it_was_not_trained_on_is_refused(lm, tmp_path):
    trainer = sae.build_trainer(lm, corpus(), small_config(steps=3), sae.model_identity(lm, "test-gpt"))
    trainer.train()
    trainer.save(tmp_path, labels={3: "a keyword"})
    loaded = sae.load(tmp_path, lm)
    assert torch.equal(loaded.sae.W_dec, trainer.model.W_dec) and loaded.labels == {3: "a keyword"}
    assert loaded.meta["history"][-1]["mse"] == trainer.history[-1].mse
    with pytest.raises(ConfigError, match="trained on test-gpt"):
        sae.load(tmp_path, model_of(ARCHITECTURES["gpt2"], seed=2))
    wider = model_of(ARCHITECTURES["gpt2"].replace(d_model=64), seed=1)
    with pytest.raises(ConfigError, match="reads 32 numbers"):
        sae.load(tmp_path, wider)


def test_an_autoencoder_trains_as_a_lab_run_and_pause_resume_changes_nothing(lm):
    config = small_config(steps=40, eval_every=0)
    plain = sae.build_trainer(lm, corpus(), config)
    plain.train()
    manager = JobManager(max_running=1, workers="thread")
    try:
        trainer = sae.build_trainer(lm, corpus(), config)
        job = manager.submit_training("student", trainer, label="sae", checkpoint=False)
        job.pause()
        for _ in range(200):
            if job.status().state.value == "paused":
                break
            job.wait(0.05)
        job.resume()
        assert job.wait(timeout=120)
        status = job.status()
        assert status.state.value == "finished" and status.step == 40
        assert "variance explained" in status.describe()
        assert status.snapshot_steps[0] == 0 and status.snapshot_steps[-1] == 40
        torch.testing.assert_close(job.snapshots.get(40)["W_dec"], plain.model.W_dec, atol=0, rtol=0)
    finally:
        manager.shutdown()


def test_a_dictionary_too_large_for_the_memory_share_is_refused_before_anything_is_built(lm):
    manager = JobManager(max_running=1, workers="thread", memory_mb=1000)
    built = []
    try:
        config = small_config(d_sae=65_536, batch=65_536, tokens=65_536)
        needs = footprint.sparse_autoencoder(lm.config, config, 32)
        with pytest.raises(JobRefused):
            manager.submit_training("student", build=lambda: built.append(1), footprint=needs, total=12)
        assert not built
    finally:
        manager.shutdown()


# ---------------------------------------------------------------------------- the browser and interventions


def test_the_feature_index_equals_a_brute_force_over_every_token():
    ours = random_sae(d_in=8, d_sae=20, k=3, seed=2)
    acts = torch.randn(5000, 8, generator=torch.Generator().manual_seed(3))  # more than one CHUNK
    index = features.feature_index(ours, acts, top=5)
    f = ours.encode(acts)  # (N, S)
    torch.testing.assert_close(index.frequency, (f > 0).float().mean(0))
    for feature in range(20):
        values = f[:, feature]
        expected = values.topk(5).values
        torch.testing.assert_close(index.top_values[feature], expected.clamp_min(0))
        fired = index.top_positions[feature] >= 0
        torch.testing.assert_close(values[index.top_positions[feature][fired]], expected[fired])
    assert index.order == sorted(range(20), key=lambda i: -float(index.frequency[i]))


def test_contexts_histogram_and_search_read_the_same_activations(lm):
    config = small_config(steps=5)
    trainer = sae.build_trainer(lm, corpus(), config)
    trainer.train()
    ids = sae.corpus_windows(corpus(), 16, 512)[: len(trainer.activations) // 16].reshape(-1)  # (N,)
    index = features.feature_index(trainer.model, trainer.activations)
    feature = index.order[0]
    found = features.contexts(trainer.model, trainer.activations, ids, index, feature, before=3, after=2, count=2)
    assert found and found[0].values[found[0].peak] == pytest.approx(float(index.top_values[feature, 0]), rel=1e-5)
    values = features.feature_values(trainer.model, trainer.activations, feature)
    counts, _ = features.histogram(values, bins=10)
    assert int(counts.sum()) == int((values > 0).sum())
    text = ids[:10].tolist()
    result = features.search(lm, trainer.model, config.hook, text)
    expected = trainer.model.encode(trainer.activations[:10])  # (10, S): the same tokens, the same stream
    for position, row in enumerate(result.per_token):
        for f_index, value in row:
            assert value == pytest.approx(float(expected[position, f_index]), rel=1e-4, abs=1e-5)


def test_logit_effects_are_the_decoder_row_through_the_unembedding(lm):
    ours = random_sae(d_in=32, d_sae=16, k=2)
    effects = features.logit_effects(lm, ours, "blocks.1.resid_pre", 3, top=4)
    logits = lm.lm_head.weight @ ours.W_dec[3]  # (V,)
    assert [t for t, _ in effects.promoted] == logits.topk(4).indices.tolist()
    assert [t for t, _ in effects.suppressed] == (-logits).topk(4).indices.tolist()
    hidden = random_sae(d_in=lm.config.mlp_width, d_sae=16, k=2)
    through = features.logit_effects(lm, hidden, "blocks.0.mlp.hidden", 1, top=3)
    expected = lm.lm_head.weight @ (lm.blocks[0].mlp.proj.weight @ hidden.W_dec[1])
    assert through.promoted[0][1] == pytest.approx(float(expected.max()), rel=1e-5)


def test_knocking_a_feature_out_and_steering_with_it(lm):
    ours = random_sae(d_in=32, d_sae=16, k=2)
    hook, ids = "blocks.1.resid_pre", corpus(12, seed=5)
    x = sae.activations_at(lm, torch.tensor([ids]), hook)  # (1, T, D)
    f = ours.encode(x)
    silent = [i for i in range(16) if not bool((f[..., i] > 0).any())]
    loud = int(f[0].sum(0).argmax())
    unchanged = features.knock_out(lm, ours, hook, ids, silent[:1] or [loud], "subtract")
    if silent:  # a feature that never fires takes nothing away
        torch.testing.assert_close(unchanged.after, unchanged.before)
    knocked = features.knock_out(lm, ours, hook, ids, [loud], "subtract")

    def manual(edit):
        logits, _, _ = lm.run_with_hooks(torch.tensor([ids]), hooks={hook: lambda t, name: edit(t)})
        return F.cross_entropy(logits[0, :-1], torch.tensor(ids[1:]), reduction="none")

    taken = lambda t: t - ours.encode(t)[..., [loud]] @ ours.W_dec[[loud]]  # noqa: E731
    torch.testing.assert_close(knocked.after, manual(taken), atol=1e-5, rtol=0)
    torch.testing.assert_close(knocked.before, manual(lambda t: t), atol=1e-5, rtol=0)
    plain = features.steer(lm, ours, hook, ids[:4], loud, alpha=0.0, new_tokens=5, temperature=0)
    assert plain.plain == plain.steered
    pushed = features.steer(lm, ours, hook, ids[:4], loud, alpha=50.0, new_tokens=5, temperature=0)
    assert len(pushed.steered) == 5 and pushed.direction_norm == pytest.approx(1.0, abs=1e-5)


# ---------------------------------------------------------------------------- the shipped autoencoder

SHIPPED = "data/gpt-python-docs-sae"
SHIPPED_VARIANCE_EXPLAINED = 0.898  # docs/interpretability.md and data/README.md say so


def test_the_shipped_autoencoder_loads_for_the_shipped_gpt_and_explains_what_the_docs_say():
    from llmviz.training.checkpoint import load_checkpoint

    model, tokenizer, _ = load_checkpoint("data/gpt-python-docs")
    loaded = sae.load(SHIPPED, model.eval())
    assert loaded.hook == "blocks.2.resid_post" and loaded.sae.d_sae == 1024 and loaded.config.k == 16
    with open("data/python-manual.txt", encoding="utf-8") as file:
        ids = tokenizer.encode(file.read()[:200_000])
    windows = sae.corpus_windows(ids, model.config.context_length, 8192)  # the corpus's first 8,192 tokens
    acts = sae.gather_activations(model, windows, loaded.hook).reshape(-1, loaded.sae.d_in)  # (N, D)
    recon, f = loaded.sae(acts)
    assert sae.variance_explained(acts, recon) == pytest.approx(SHIPPED_VARIANCE_EXPLAINED, abs=5e-3)
    assert float((f > 0).sum(-1).float().mean()) == 16
    last = loaded.meta["history"][-1]
    assert last["spliced"]["spliced"] < last["spliced"]["zeroed"]


# ---------------------------------------------------------------------------- SAELens's own autoencoders, converted


def sae_lens_model(architecture: str, *, rescale: bool | None = None, apply_b_dec: bool = True, seed: int = 3):
    """A SAELens autoencoder with every weight random and decoder rows 0.05 to 2 long (as training leaves them)."""
    from sae_lens.saes.jumprelu_sae import JumpReLUSAE, JumpReLUSAEConfig
    from sae_lens.saes.standard_sae import (
        StandardSAE,
        StandardSAEConfig,
        StandardTrainingSAE,
        StandardTrainingSAEConfig,
    )
    from sae_lens.saes.topk_sae import TopKSAE, TopKSAEConfig, TopKTrainingSAE, TopKTrainingSAEConfig

    size = {"d_in": 12, "d_sae": 40}
    made = {
        "topk-training": lambda: TopKTrainingSAE(TopKTrainingSAEConfig(k=5, **size)),  # rescales by default
        "topk": lambda: TopKSAE(TopKSAEConfig(k=5, rescale_acts_by_decoder_norm=bool(rescale), **size)),
        "standard-training": lambda: StandardTrainingSAE(
            StandardTrainingSAEConfig(apply_b_dec_to_input=apply_b_dec, **size)
        ),
        "standard": lambda: StandardSAE(StandardSAEConfig(apply_b_dec_to_input=apply_b_dec, **size)),
        "jumprelu": lambda: JumpReLUSAE(JumpReLUSAEConfig(**size)),
    }[architecture]()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        made.W_enc.copy_(torch.randn(made.W_enc.shape, generator=generator) / 3)
        made.b_enc.copy_(0.3 * torch.randn(made.b_enc.shape, generator=generator))
        made.b_dec.copy_(0.5 * torch.randn(made.b_dec.shape, generator=generator))
        rows = torch.randn(made.W_dec.shape, generator=generator)
        lengths = 0.05 + 1.95 * torch.rand(rows.shape[0], 1, generator=generator)
        made.W_dec.copy_(rows / rows.norm(dim=1, keepdim=True) * lengths)
    return made.eval()


def their_reconstruction(theirs, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return theirs.decode(theirs.encode(x))


@pytest.mark.parametrize(
    ("architecture", "options"),
    [
        ("topk-training", {}),
        ("topk", {"rescale": True}),
        ("standard-training", {}),
        ("standard", {}),
        ("standard", {"apply_b_dec": False}),
    ],
)
def test_a_sae_lens_autoencoder_converts_to_the_same_reconstructions_and_features(architecture, options):
    """SAELens's own forward pass on random inputs is the reference (1e-5); the features are SAELens's after its own
    ``fold_W_dec_norm`` (a ReLU's come out n_i times larger when the norms are folded; a rescaling TopK's are
    unchanged)."""
    theirs = sae_lens_model(architecture, **options)
    ours = sae.from_sae_lens(dict(theirs.state_dict()), theirs.cfg.to_dict())
    x = 2 * torch.randn(256, 12, generator=torch.Generator().manual_seed(9))
    recon, f = ours(x)
    torch.testing.assert_close(recon, their_reconstruction(theirs, x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ours.W_dec.norm(dim=1), torch.ones(40))
    theirs.fold_W_dec_norm()
    with torch.no_grad():
        torch.testing.assert_close(f, theirs.encode(x), atol=1e-5, rtol=1e-5)
    if ours.k:
        assert int((f > 0).sum(-1).max()) <= ours.k


def test_a_raw_topk_state_dict_in_an_autoencoder_folder_is_refused_with_the_reason(tmp_path):
    """The audit's case: a TopKTrainingSAE's state dict (decoder rows 0.05-2 long, rescaling on) saved as an llmviz
    autoencoder loaded with no error and reconstructed differently (max |Δ| 0.064). Its weights alone cannot say how
    it chose its k features: refused, naming the conversion, which reads SAELens's config and gets it right."""
    from safetensors.torch import save_file

    theirs = sae_lens_model("topk-training")
    sae.save(sae.SparseAutoencoder(12, 40, 5), sae.SaeConfig(d_sae=40, k=5), tmp_path, {"name": "x"})
    save_file({n: t.detach().contiguous() for n, t in theirs.state_dict().items()}, str(tmp_path / sae.WEIGHTS_FILE))
    with pytest.raises(ConfigError, match="not unit length.*from_sae_lens") as refused:
        sae.load(tmp_path)
    assert "\n" not in str(refused.value)


def test_a_raw_relu_state_dict_in_an_autoencoder_folder_loads_folded_and_reconstructs_the_same(tmp_path):
    from safetensors.torch import save_file

    theirs = sae_lens_model("standard-training")
    sae.save(sae.SparseAutoencoder(12, 40, 0), sae.SaeConfig(d_sae=40, k=0, l1=1.0), tmp_path, {"name": "x"})
    save_file({n: t.detach().contiguous() for n, t in theirs.state_dict().items()}, str(tmp_path / sae.WEIGHTS_FILE))
    loaded = sae.load(tmp_path).sae
    x = torch.randn(64, 12, generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(loaded(x)[0], their_reconstruction(theirs, x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(loaded.W_dec.norm(dim=1), torch.ones(40))


@pytest.mark.parametrize(("architecture", "options"), [("topk-training", {}), ("topk", {"rescale": False})])
def test_a_raw_sae_lens_topk_state_dict_given_to_load_state_dict_is_refused_in_one_line(architecture, options):
    """Issue 72 §13: SAELens's keys are ours, so ``load_state_dict`` took a TopK state dict whose decoder rows are
    0.05 to 2 long and reconstructed wrongly (max |Δ| 21.0 against SAELens's own forward pass). Refused, naming the
    conversion; :func:`sae.from_sae_lens` with its config reconstructs what SAELens does."""
    theirs = sae_lens_model(architecture, **options)
    ours = sae.SparseAutoencoder(12, 40, 5)
    before = {name: tensor.clone() for name, tensor in ours.state_dict().items()}
    with pytest.raises(ConfigError, match="not unit length.*from_sae_lens") as refused:
        ours.load_state_dict(dict(theirs.state_dict()))
    assert "\n" not in str(refused.value)
    assert all(torch.equal(before[name], tensor) for name, tensor in ours.state_dict().items())  # nothing half-loaded


def test_a_raw_sae_lens_relu_state_dict_given_to_load_state_dict_reconstructs_as_sae_lens_does():
    theirs = sae_lens_model("standard-training")
    state = dict(theirs.state_dict())
    ours = sae.SparseAutoencoder(12, 40, 0)
    ours.load_state_dict(state)
    x = 2 * torch.randn(128, 12, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        torch.testing.assert_close(ours(x)[0], their_reconstruction(theirs, x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ours.W_dec.norm(dim=1), torch.ones(40))
    assert not torch.equal(state["W_dec"], ours.W_dec.detach())  # the caller's tensors are left as they were


def test_our_own_state_dict_loads_back_exactly():
    ours, again = random_sae(), sae.SparseAutoencoder(12, 40, 5)
    again.load_state_dict(ours.state_dict())
    assert all(torch.equal(t, again.state_dict()[name]) for name, t in ours.state_dict().items())


@pytest.mark.parametrize(
    ("architecture", "options", "says"),
    [
        ("jumprelu", {}, "jumprelu autoencoder cannot be converted"),
        ("topk", {"rescale": False}, "not unit length"),  # no unit decoder picks the same k features
    ],
)
def test_what_cannot_be_converted_is_refused_in_one_line(architecture, options, says):
    theirs = sae_lens_model(architecture, **options)
    with pytest.raises(ConfigError, match=says) as refused:
        sae.from_sae_lens(dict(theirs.state_dict()), theirs.cfg.to_dict())
    assert "\n" not in str(refused.value)
    topk = sae_lens_model("topk-training")
    with pytest.raises(ConfigError, match="normalises its input"):
        sae.from_sae_lens(dict(topk.state_dict()), {**topk.cfg.to_dict(), "normalize_activations": "layer_norm"})
