"""Interventions on GPT-2 and Llama-family checkpoints loaded into llmviz's GPT (llmviz.hub), against the same
interventions made with plain PyTorch forward hooks on the Hugging Face transformers model the checkpoint came from:
head ablation on the input of its output projection, activation patching and steering on its decoder layers' input."""

from __future__ import annotations

import contextlib

import pytest
import torch
import torch.nn.functional as F

from llmviz.hub import gpt2, llama
from llmviz.interpret import ablation, patching, steering
from llmviz.models.gpt import cache_name
from tests.support.gpt2 import make_hf_gpt2
from tests.support.interventions import make_hf_causal_lm

VOCAB = 300


@pytest.fixture(scope="module", params=["gpt2", "llama", "qwen2"])
def pair(request, tmp_path_factory):
    """(transformers model, its decoder layers, the attention output projection of a layer, llmviz's GPT)."""
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "gpt2":
        reference = make_hf_gpt2(vocab_size=VOCAB, n_layer=2, n_embd=64, n_head=4, n_positions=64, seed=3)
        reference.save_pretrained(folder)
        layers = reference.transformer.h
        return reference, layers, lambda layer: layers[layer].attn.c_proj, gpt2.gpt_from_folder(folder)
    reference = make_hf_causal_lm(request.param, seed=3)
    reference.save_pretrained(folder)
    layers = reference.model.layers
    return reference, layers, lambda layer: layers[layer].self_attn.o_proj, llama.load_hf_causal_lm(folder)


@pytest.fixture(scope="module")
def prompts() -> tuple[list[int], list[int]]:
    clean = torch.randint(0, VOCAB, (12,), generator=torch.Generator().manual_seed(7)).tolist()
    corrupted = list(clean)
    corrupted[5] = (clean[5] + 1) % VOCAB
    return clean, corrupted


@contextlib.contextmanager
def hooked(handles):
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def hf_logits(reference, ids, handles=()) -> torch.Tensor:
    with hooked(list(handles)), torch.no_grad():
        return reference(torch.tensor([ids])).logits


def test_head_ablation_equals_hooks_on_the_output_projection(pair, prompts):
    reference, _, output_projection, ours = pair
    ids = prompts[0]
    head_dim = ours.config.head_dim
    heads = [(0, 3), (1, 1)]

    def zero(layer):
        def pre(module, args):
            x = args[0].clone()
            for at, h in heads:
                if at == layer:
                    x[..., h * head_dim : (h + 1) * head_dim] = 0.0
            return (x,)

        return output_projection(layer).register_forward_pre_hook(pre)

    logits = hf_logits(reference, ids, [zero(0), zero(1)])
    expected = F.cross_entropy(logits[0, :-1], torch.tensor(ids[1:]))
    assert ablation.ablate(ours, ids, heads).loss_after == pytest.approx(float(expected), abs=1e-5)


def test_residual_patching_and_steering_equal_hooks_on_the_decoder_layers(pair, prompts):
    reference, layers, _, ours = pair
    clean, corrupted = prompts
    answer, wrong = patching.default_answers(ours, clean, corrupted)
    result = patching.patching(ours, clean, corrupted, answer, wrong, "resid_pre")
    seen = {}
    keep = [
        layer.register_forward_pre_hook(lambda m, args, i=i: seen.__setitem__(i, args[0].clone()))
        for i, layer in enumerate(layers)
    ]
    hf_logits(reference, clean, keep)
    for layer in range(ours.config.n_layers):
        for position in (5, 11):

            def put(module, args, layer=layer, position=position):
                x = args[0].clone()
                x[:, position] = seen[layer][:, position]
                return (x, *args[1:])

            logits = hf_logits(reference, corrupted, [layers[layer].register_forward_pre_hook(put)])
            expected = logits[0, -1, answer] - logits[0, -1, wrong]
            assert float(result.differences[layer, position]) == pytest.approx(float(expected), abs=1e-5)

    direction = steering.token_direction(ours, 42)
    steered, _, _ = ours.run_with_hooks(
        torch.tensor([clean]), hooks={cache_name(1, "resid_pre"): steering.steering_hook(direction, 3.0)}
    )
    add = layers[1].register_forward_pre_hook(lambda m, args: (args[0] + 3.0 * direction, *args[1:]))
    torch.testing.assert_close(steered, hf_logits(reference, clean, [add]), atol=1e-5, rtol=0)
