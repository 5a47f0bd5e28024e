"""Every page's computations work on a tiny model of every preset (each combination of switches).

The functions the pages call (llmviz.lessons.forward, llmviz.interpret.lens, llmviz.generation.sampling,
llmviz.lessons.model,
llmviz.lessons.quiz, llmviz.lessons.architectures) run on each; where a page's number has an independent
definition it is checked: the logit lens's last row is the model's own prediction (so the final
norm it applies is the model's RMSNorm or LayerNorm), the token losses average to
``F.cross_entropy``, greedy generation is the same with and without the KV cache.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import llmviz.lessons.model  # the fixture below is named model
from llmviz.generation import sampling
from llmviz.interpret import heads
from llmviz.interpret.lens import sequence_logit_lens, token_losses
from llmviz.lessons import architectures, forward, quiz
from llmviz.models.gpt import GPT
from llmviz.models.presets import PRESETS
from llmviz.tokenizers.char_word import CharTokenizer
from llmviz.tokenizers.ids import encode

TOKENIZER = CharTokenizer.train("abcdefghijklmnopqrstuvwxyz .,:()=\n")


def tiny_of(name: str):
    """The preset's switches at a size that runs in milliseconds (9 heads of SmolLM2 kept: d_model 72)."""
    config = PRESETS[name]
    d_model = 8 * config.n_heads
    return config.replace(
        vocab_size=TOKENIZER.vocab_size,
        context_length=32,
        d_model=d_model,
        n_layers=2,
        d_mlp=None if config.d_mlp is None else 2 * d_model,
    )


@pytest.fixture(scope="module", params=list(PRESETS))
def model(request):
    torch.manual_seed(0)
    return GPT(tiny_of(request.param)).eval()


TEXT = "for x in range(10): print(x)"


def test_views(model):
    ids = encode(TOKENIZER, TEXT)
    found = forward.attention_patterns(model, ids)
    assert found.patterns.shape == (2, model.config.n_heads, len(ids), len(ids))
    torch.testing.assert_close(found.patterns.sum(-1), torch.ones(2, model.config.n_heads, len(ids)))
    assert forward.embedding_table(model).shape == (TOKENIZER.vocab_size, model.config.d_model)
    tokens, positions = forward.input_embeddings(model, ids)
    assert tokens.shape == positions.shape == (len(ids), model.config.d_model)
    if model.config.positions in ("rope", "none"):
        assert not positions.any()  # nothing is added to the token vectors
    assert "logits" in forward.recorded_pass(model, ids)


def test_interpret(model):
    ids = encode(TOKENIZER, TEXT)
    lens = sequence_logit_lens(model, ids, k=3)
    with torch.no_grad():
        logits, _ = model(torch.tensor([ids]))
    torch.testing.assert_close(lens.top_probs[-1, :, 0], logits[0].softmax(-1).max(-1).values, atol=1e-5, rtol=0)
    assert lens.top_ids[-1, :, 0].tolist() == logits[0].argmax(-1).tolist()
    tokens, scores = heads.model_head_scores(model, half_length=8)
    assert scores["induction"].shape == (2, model.config.n_heads)
    losses = token_losses(model, ids)
    expected = F.cross_entropy(logits[0, :-1], torch.tensor(ids[1:]))
    assert losses.mean == pytest.approx(float(expected), abs=1e-5)


def test_sampling(model):
    ids = encode(TOKENIZER, TEXT)[:10]
    with_cache = [r.token for r in sampling.generate(model, ids, 30, temperature=0.0, use_kv_cache=True)]
    without = [r.token for r in sampling.generate(model, ids, 30, temperature=0.0, use_kv_cache=False)]
    assert with_cache == without  # 40 tokens > the context of 32: the context shift is exercised too
    comparison = sampling.compare_kv_cache(model, ids, max_new_tokens=8)
    assert comparison is not None
    assert sampling.next_token_view(model, TOKENIZER, "for x", 1.0, 0, 1.0) is not None
    assert sampling.beam_search(model, ids, width=2, max_new_tokens=3) is not None


def test_model_page_numbers(model):
    config = model.config
    cache = forward.recorded_pass(model, encode(TOKENIZER, TEXT))
    assert len(llmviz.lessons.model.residual_norms(cache, config.n_layers)) == config.n_layers + 1
    assert llmviz.lessons.model.layernorm_before_after(cache, 1)["var_after"].shape[0] > 0
    assert sum(llmviz.lessons.model.parameter_table(config).values()) == model.num_parameters()
    steps = architectures.architecture(config)
    assert steps[-1].shape[-1] == str(config.vocab_size)
    router = architectures.router_choices(cache, 0)
    assert (router is None) == (config.n_experts == 0)
    if router is not None:
        assert int(router.load.sum()) == router.experts.numel()
        torch.testing.assert_close(router.weights.sum(-1), torch.ones(router.weights.shape[0]))


def test_attention_quiz(model):
    ids = encode(TOKENIZER, TEXT)[:12]
    cache = forward.recorded_pass(model, ids)
    questions = quiz.attention_questions(cache, [TOKENIZER.printable(i) for i in ids], 1, 0)
    assert questions
