"""The Features tab's numbers (llmviz/lessons/inside.py) on the shipped GPT and its shipped autoencoder, each checked
against a brute-force computation in the test: every feature encoded on every token at once, the unembedding
multiplied by hand, the model run with the activation replaced by hand (the page's AppTest is
tests/app/test_inside.py)."""

from __future__ import annotations

import pytest
import torch

from llmviz.interpret import features, sae
from llmviz.lessons import inside
from llmviz.models.gpt import GPTConfig, cache_name
from llmviz.tokenizers.base import TokenizerError
from llmviz.training.checkpoint import load_checkpoint
from tests.support.paths import DATA

TOKENS = 2048  # 16 windows of the shipped GPT: enough to fire most features, quick


@pytest.fixture(scope="module")
def shipped():
    model, tokenizer, _ = load_checkpoint(DATA / "gpt-python-docs")
    loaded = sae.load(DATA / "gpt-python-docs-sae", model)
    text = (DATA / "python-manual.txt").read_text(encoding="utf-8")
    ids = inside.feature_corpus_ids(tokenizer, text)
    corpus = inside.feature_corpus(model, loaded.sae, loaded.hook, ids, tokens=TOKENS)
    return model.eval(), tokenizer, loaded, corpus


def all_features(loaded, corpus) -> torch.Tensor:
    with torch.no_grad():
        return loaded.sae.encode(corpus.acts)  # (N, S): every feature on every token, in one go


def test_the_corpus_is_whole_windows_and_its_activations_are_the_hook_point(shipped):
    model, tokenizer, loaded, corpus = shipped
    context = model.config.context_length
    assert len(corpus.ids) == TOKENS and TOKENS % context == 0
    captured = {}

    def keep(x, name):
        captured[name] = x.detach().float()

    with torch.no_grad():
        model.run_with_hooks(corpus.ids.view(-1, context), hooks={loaded.hook: keep})
    torch.testing.assert_close(corpus.acts, captured[loaded.hook].reshape(-1, loaded.sae.d_in), atol=1e-5, rtol=1e-5)
    assert inside.feature_corpus_ids(tokenizer, "x" * 10**6) == tokenizer.encode("x" * inside.MAX_CORPUS_CHARS)


def distinct_places(corpus, feature: int, before: int = 12, after: int = 4) -> list[tuple[int, int, int]]:
    """The rule of the browser's contexts, written again here: the feature's kept top activations in order, each
    with the stretch [lo, hi) around it inside its window of the corpus, skipping a top token inside a stretch kept
    and a stretch whose tokens, aligned at the top token, equal a kept one's wherever both have tokens."""
    window, ids, kept = corpus.window, corpus.ids.tolist(), []
    for position in corpus.index.top_positions[feature].tolist():
        if position < 0:
            break
        if any(lo <= position < hi for _, lo, hi in kept):
            continue
        start = position // window * window
        lo, hi = max(start, position - before), min(start + window, position + after + 1)
        mine = {offset - position: ids[offset] for offset in range(lo, hi)}
        if any(all(mine[d] == ids[top + d] for d in mine if k_lo <= top + d < k_hi) for top, k_lo, k_hi in kept):
            continue
        kept.append((position, lo, hi))
    return kept


def readability(corpus, feature: int) -> tuple:
    """The browser's stated order, written again: (≥ 6 distinct places, the share of them on the most common top
    token, how often the feature fires)."""
    tokens = [int(corpus.ids[position]) for position, _, _ in distinct_places(corpus, feature)]
    enough = len(tokens) >= 6
    share = round(max(tokens.count(t) for t in tokens) / len(tokens), 4) if enough else 0.0
    return enough, share, float(corpus.index.frequency[feature])


def test_the_table_lists_the_most_readable_features_first_with_the_students_labels(shipped):
    _, _, loaded, corpus = shipped
    f = all_features(loaded, corpus)  # (N, S)
    fired = (f > 0).float()
    frequency = fired.mean(0)  # (S,)
    keys = [readability(corpus, feature) for feature in range(loaded.sae.d_sae)]
    first = max(range(loaded.sae.d_sae), key=lambda g: (keys[g], -g))
    rows = inside.feature_rows(corpus, {first: "the clearest"}, count=10)
    assert rows[0]["feature"] == first and rows[0]["label"] == "the clearest" and rows[1]["label"] == ""
    listed = [keys[r["feature"]] for r in rows]
    assert listed == sorted(listed, reverse=True)  # the stated order
    assert keys[first][:2] == (True, 1.0)  # every distinct top place of the first feature on one token
    assert frequency[first] < frequency.max()  # the densest feature is not the first any more
    for row in rows:
        feature = row["feature"]
        assert row["fires on"] == pytest.approx(float(frequency[feature]), abs=1e-7)
        mean = float(f[:, feature].sum() / fired[:, feature].sum())
        assert row["mean when firing"] == pytest.approx(mean, rel=1e-4)
        assert row["max"] == pytest.approx(float(f[:, feature].max()), rel=1e-5)


def test_a_feature_card_is_its_distinct_top_contexts_histogram_and_unembedding(shipped):
    model, _, loaded, corpus = shipped
    f = all_features(loaded, corpus)  # (N, S)
    feature = corpus.order[0]
    card = inside.feature_card(model, loaded.sae, loaded.hook, corpus, feature)
    places = distinct_places(corpus, feature)[: inside.FEATURE_CONTEXTS]
    assert len(card.contexts) == inside.FEATURE_CONTEXTS == len(places)
    texts = [tuple(c.ids) for c in card.contexts]
    assert len(set(texts)) == len(texts)  # no window shown twice
    tails = [tuple(c.ids[c.peak : c.peak + 3]) + tuple(c.ids[max(0, c.peak - 3) : c.peak]) for c in card.contexts]
    assert len(set(tails)) == len(tails)  # nor the same passage cut shorter
    for context, (position, lo, hi) in zip(card.contexts, places):
        assert context.ids == corpus.ids[lo:hi].tolist() and context.ids[context.peak] == int(corpus.ids[position])
        assert context.values == pytest.approx(f[lo:hi, feature].tolist(), rel=1e-5, abs=1e-6)
        assert lo // corpus.window == (hi - 1) // corpus.window  # inside one window of the corpus
    peaks = [c.values[c.peak] for c in card.contexts]
    assert peaks == sorted(peaks, reverse=True) and peaks[0] == pytest.approx(float(f[:, feature].max()), rel=1e-5)
    firing = f[:, feature][f[:, feature] > 0]
    assert int(card.counts.sum()) == len(firing) and card.frequency == pytest.approx(len(firing) / TOKENS)
    assert float(card.edges[0]) == pytest.approx(float(firing.min())) and len(card.edges) == inside.FEATURE_BINS + 1
    logits = model.lm_head.weight.detach() @ loaded.sae.W_dec[feature].detach()  # (V,): W_U times the direction
    top = logits.topk(inside.FEATURE_LOGITS)
    assert [t for t, _ in card.effects.promoted] == top.indices.tolist()
    assert [v for _, v in card.effects.promoted] == pytest.approx(top.values.tolist(), rel=1e-5)
    assert [t for t, _ in card.effects.suppressed] == (-logits).topk(inside.FEATURE_LOGITS).indices.tolist()


def test_the_knock_out_opens_on_the_strongest_feature_of_its_text_and_changes_its_loss(shipped):
    model, tokenizer, loaded, _ = shipped
    ids = tokenizer.encode(inside.DEFAULT_LOSS_TEXT)
    captured = {}
    with torch.no_grad():
        model.run_with_hooks(torch.tensor([ids]), hooks={loaded.hook: lambda x, name: captured.update(x=x)})
        total = loaded.sae.encode(captured["x"][0].float()).sum(0)  # (S,): each feature summed over the text
    feature = inside.knockout_default(model, loaded.sae, loaded.hook, ids)
    assert feature == int(total.argmax()) and float(total[feature]) > 0
    result = features.knock_out(model, loaded.sae, loaded.hook, ids, [feature], "subtract")
    assert abs(float(result.after.mean() - result.before.mean())) >= 1e-3  # shown with 4 decimals: not +0.0000


def test_search_lists_the_features_that_fire_at_every_token(shipped):
    model, tokenizer, loaded, _ = shipped
    ids = tokenizer.encode(inside.DEFAULT_FEATURE_SEARCH)
    found = inside.feature_search(model, loaded.sae, loaded.hook, ids)
    captured = {}
    with torch.no_grad():
        model.run_with_hooks(torch.tensor([ids]), hooks={loaded.hook: lambda x, name: captured.update(x=x)})
        f = loaded.sae.encode(captured["x"][0].float())  # (T, S)
    assert len(found.per_token) == len(ids)
    for row, expected in zip(found.per_token, f):
        values, indices = expected.topk(inside.TOP)
        assert [feature for feature, _ in row] == indices[values > 0].tolist()
    assert found.overall[0][0] == int(f.max(0).values.argmax())
    assert inside.bounded_text("a" * inside.MAX_FEATURE_TEXT, "search text")
    with pytest.raises(TokenizerError, match="longer than 2,000 characters"):
        inside.bounded_text("a" * (inside.MAX_FEATURE_TEXT + 1), "search text")


def test_knocking_a_feature_out_is_the_model_with_its_contribution_subtracted_by_hand(shipped):
    model, tokenizer, loaded, _ = shipped
    ids = tokenizer.encode(inside.DEFAULT_LOSS_TEXT)
    search = inside.feature_search(model, loaded.sae, loaded.hook, ids)
    feature = search.overall[0][0]
    result = features.knock_out(model, loaded.sae, loaded.hook, ids, [feature], "subtract")
    rows = torch.tensor([ids])

    def subtract(x, name):
        f = loaded.sae.encode(x.float())  # (1, T, S)
        return x - f[..., feature : feature + 1] * loaded.sae.W_dec[feature]  # (1, T, D)

    with torch.no_grad():
        for hooks, expected in (({}, result.before), ({loaded.hook: subtract}, result.after)):
            logits, _, _ = model.run_with_hooks(rows, hooks=hooks)
            losses = torch.nn.functional.cross_entropy(logits[0, :-1], rows[0, 1:], reduction="none")
            torch.testing.assert_close(expected, losses, atol=1e-5, rtol=1e-5)
    assert float(result.change.abs().max()) > 0


def test_steering_with_alpha_zero_writes_the_plain_text_twice(shipped):
    model, tokenizer, loaded, _ = shipped
    ids = tokenizer.encode(inside.DEFAULT_FEATURE_PROMPT)
    pair = inside.feature_steer(model, loaded.sae, loaded.hook, ids, 5, 0.0, seed=3)
    assert pair.plain == pair.steered and len(pair.plain) == inside.NEW_TOKENS
    assert pair.direction_norm == pytest.approx(1.0, abs=1e-5)  # a decoder row: unit length


def test_hook_points_are_every_layers_cache_names_and_each_is_readable():
    config = GPTConfig(vocab_size=16, context_length=8, d_model=8, n_heads=2, n_layers=2)
    points = inside.hook_points(config)
    assert list(points) == [cache_name(layer, p) for layer in range(2) for p in sae.POINTS]
    experts = GPTConfig(vocab_size=16, context_length=8, d_model=8, n_heads=2, n_layers=1, n_experts=2)
    assert "blocks.0.mlp.hidden" not in inside.hook_points(experts)


def test_the_page_run_trains_on_the_corpus_and_its_curves_are_its_history(shipped):
    model, tokenizer, _, _ = shipped
    config = inside.sae_config(1, "resid_post", 64, 4, 0.5, steps=3)
    assert (config.k, config.l1, config.tokens) == (4, 0.0, inside.SAE_TRAIN_TOKENS)
    assert inside.sae_config(1, "resid_post", 64, 0, 0.5).sparsity == "L1 λ=0.5"
    small = sae.SaeConfig(layer=1, d_sae=64, k=4, steps=3, batch=64, tokens=512, eval_every=2, eval_windows=1)
    text = (DATA / "python-manual.txt").read_text(encoding="utf-8")
    trainer = inside.build_sae_trainer(model, tokenizer, text, small, "shipped")
    assert trainer.model_id["fingerprint"] == sae.model_fingerprint(model)
    trainer.train()
    rows = inside.sae_curves(trainer.history)
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert rows[0]["spliced-in loss"] is None and rows[1]["spliced-in loss"] == trainer.history[1].spliced.spliced
    assert [r["variance explained"] for r in rows] == [m.variance_explained for m in trainer.history]
