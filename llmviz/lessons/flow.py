"""The flow: one forward pass of a model as the Model page draws it (``ui/panels/flow.py`` and
``ui/components/flow/flow.js``), every number read from the model's own ``run_with_cache``.

:func:`flow_payload` returns a compact, JSON-able dict: the tokens, the stages in the order the model computes them
(tokens → embeddings → each block's attention and MLP → final norm → logits → probabilities), per token and stage the
vector's norm and first entries, every head's attention pattern, the MLP's neurons (or the router's experts), and the
last position's logits sorted, for the browser to reshape with temperature, top-k and top-p. Numbers are float32
values written with the fewest digits that read back as the same float32 (``Math.fround`` in the browser gives the
cache's value exactly); a payload for the shipped GPT and a 20-token sentence is about 130 KB.

>>> import torch
>>> from llmviz.models.gpt import GPT, GPTConfig
>>> from llmviz.tokenizers.char_word import CharTokenizer
>>> tokenizer = CharTokenizer.train("abcdef ")
>>> model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, context_length=8, d_model=8, n_layers=2, n_heads=2)).eval()
>>> payload = flow_payload(model, tokenizer, [0, 1, 2])
>>> [stage["id"] for stage in payload["stages"]]
['tokens', 'embed', 'attn0', 'mlp0', 'attn1', 'mlp1', 'final', 'logits', 'probs']
>>> len(payload["blocks"][0]["patterns"]), payload["blocks"][0]["patterns"][0][2].__len__()  # heads; row 2 reads 3
(2, 3)
"""

from __future__ import annotations

import json

import numpy as np
import torch
import torch.nn as nn

from llmviz.errors import ConfigError
from llmviz.lessons import words
from llmviz.lessons.forward import context_length, model_device
from llmviz.models.charlevel import GRU, RNN, WaveNet
from llmviz.models.gpt import GPT, cache_name

FLOW_VERSION = 1
MAX_FLOW_TOKENS = 32  # the picture stays readable (and its payload small) up to this many tokens
FIRST_ENTRIES = 6  # a vector's first entries shown on hover
TOP_PER_POSITION = 5  # each position's most likely next tokens
BARS = 10  # the output bars: the last position's most likely next tokens
MAX_LOGITS = 8192  # the last position's logits sent in full up to this vocabulary (GPT-2's 50,257: its top 8,192)
TOP_NEURONS = 3  # an MLP's strongest neurons per token


def f32(values: torch.Tensor | float) -> list | float:
    """Float32 values as Python floats written with the fewest digits that read back as the same float32.

    >>> f32(torch.tensor([0.1, 1 / 3])), f32(torch.tensor(2.5))
    ([0.1, 0.33333334], 2.5)
    """
    array = torch.as_tensor(values).detach().to("cpu", torch.float32).numpy()
    return _shortest(array)


def _shortest(array: np.ndarray) -> list | float:
    if array.ndim == 0:
        return float(str(array[()]))  # numpy prints a float32 with the fewest digits that read back the same
    return [_shortest(row) for row in array] if array.ndim > 1 else [float(str(x)) for x in array]


def vector_summary(vectors: torch.Tensor) -> dict:
    """Per token: the vector's L2 norm and its first :data:`FIRST_ENTRIES` entries; ``vectors`` (T, C) or (T, …).

    >>> vector_summary(torch.tensor([[3.0, 4.0]]))
    {'norm': [5.0], 'first': [[3.0, 4.0]], 'size': 2}
    """
    flat = vectors.detach().float().reshape(vectors.shape[0], -1)  # (T, C)
    return {"norm": f32(flat.norm(dim=-1)), "first": f32(flat[:, :FIRST_ENTRIES]), "size": flat.shape[1]}


def lower_rows(pattern: torch.Tensor) -> list[list[float]]:
    """A causal pattern (T, T) as its rows up to the diagonal: row i is what token i reads (i + 1 weights).

    >>> lower_rows(torch.tensor([[1.0, 0.0], [0.25, 0.75]]))
    [[1.0], [0.25, 0.75]]
    """
    return [f32(pattern[i, : i + 1]) for i in range(pattern.shape[0])]  # type: ignore[misc]


def printable(tokenizer, token: int) -> str:
    """A token as the page prints it (the tokenizer's own printable form)."""
    return str(tokenizer.printable(int(token)))


def next_tokens(logits: torch.Tensor, tokenizer) -> dict:
    """Each position's :data:`TOP_PER_POSITION` most likely next tokens and their probabilities (softmax in float64,
    as the sampling pages compute it), from ``logits`` (T, V)."""
    probs = torch.softmax(logits.double(), dim=-1)  # (T, V)
    top = torch.topk(probs, min(TOP_PER_POSITION, probs.shape[-1]), dim=-1)
    return {
        "ids": top.indices.tolist(),
        "tokens": [[printable(tokenizer, i) for i in row] for row in top.indices.tolist()],
        "probs": f32(top.values.float()),
        "logits": f32(logits.gather(-1, top.indices)),
    }


def last_logits(logits: torch.Tensor, tokenizer) -> dict:
    """The last position's logits sorted from the largest: all of them up to :data:`MAX_LOGITS` (the browser
    reshapes them with temperature, top-k and top-p), the first :data:`BARS` with their tokens; ``omitted`` logits of
    a larger vocabulary are left out and ``omitted_share`` is their probability at temperature 1."""
    row = logits[-1].detach().float()  # (V,)
    kept = min(MAX_LOGITS, row.shape[0])
    values, order = torch.sort(row, descending=True, stable=True)
    omitted_share = float(torch.softmax(row.double(), dim=-1)[order[kept:]].sum()) if kept < row.shape[0] else 0.0
    return {
        "logits": f32(values[:kept]),
        "ids": order[:BARS].tolist(),
        "tokens": [printable(tokenizer, i) for i in order[:BARS].tolist()],
        "omitted": int(row.shape[0] - kept),
        "omitted_share": omitted_share,
    }


def model_facts(model: nn.Module, vocab_size: int) -> dict:
    """What the picture draws about the architecture: sizes and switches (a GPT), or the model's class."""
    config = getattr(model, "config", None)
    if not isinstance(model, GPT) or config is None:
        return {"kind": "other", "name": type(model).__name__, "vocab": vocab_size}
    return {
        "kind": "gpt",
        "name": type(model).__name__,
        "vocab": vocab_size,
        "layers": config.n_layers,
        "heads": config.n_heads,
        "kv_heads": config.kv_heads,
        "d_model": config.d_model,
        "head_dim": config.head_dim,
        "positions": config.positions,
        "norm": config.norm,
        "mlp": (config.mlp_kind if config.mlp else None),
        "experts": config.n_experts,
        "top_k": config.experts_top_k if config.n_experts else 0,
    }


def mlp_summary(cache: dict[str, torch.Tensor], layer: int) -> dict:
    """Block ``layer``'s MLP per token: the share of neurons above zero and the strongest neurons (a dense MLP), or
    the experts the router chose with their weights and the router's probabilities (a mixture of experts)."""
    experts = cache.get(cache_name(layer, "mlp.experts"))
    if experts is not None:
        return {
            "experts": experts[0].tolist(),  # (T, k)
            "weights": f32(cache[cache_name(layer, "mlp.expert_weights")][0]),  # (T, k)
            "router": f32(cache[cache_name(layer, "mlp.router_probs")][0]),  # (T, E)
        }
    hidden = cache[cache_name(layer, "mlp.hidden")][0].float()  # (T, F)
    top = torch.topk(hidden.abs(), min(TOP_NEURONS, hidden.shape[-1]), dim=-1).indices  # (T, k)
    return {
        "width": hidden.shape[-1],
        "active": f32((hidden > 0).float().mean(-1)),
        "top": top.tolist(),
        "top_values": f32(hidden.gather(-1, top)),
    }


def gpt_stages(cache: dict[str, torch.Tensor], facts: dict) -> tuple[list[dict], list[dict]]:
    """A GPT's stages (with their vectors) and blocks (patterns, MLP) from its cache."""
    tokens = cache["embed.tok"].shape[1]
    d = facts["d_model"]
    rope = facts["positions"] == "rope"
    norm = "RMSNorm" if facts["norm"] == "rmsnorm" else "LayerNorm"
    stages: list[dict] = [
        {
            "id": "embed",
            "kind": "embed",
            "title": "Token + position" if facts["positions"] in ("learned", "sinusoidal") else "Token embedding",
            "shape": f"({tokens}, {d})",
            "main": vector_summary(cache[cache_name(0, "resid_pre")][0] if facts["layers"] else cache["ln_f"][0]),
            "tok": vector_summary(cache["embed.tok"][0]),
            "pos": None if rope or facts["positions"] == "none" else vector_summary(cache["embed.pos"]),
        }
    ]
    blocks: list[dict] = []
    for layer in range(facts["layers"]):
        pattern = cache[cache_name(layer, "attn.pattern")][0]  # (H, T, T)
        stages.append(
            {
                "id": f"attn{layer}",
                "kind": "attn",
                "layer": layer,
                "title": f"Block {layer} · attention",
                "shape": f"{facts['heads']} heads × ({tokens}, {tokens})",
                "normed": vector_summary(cache[cache_name(layer, "ln1")][0]),
                "add": vector_summary(cache[cache_name(layer, "attn.out")][0]),
                "main": vector_summary(cache[cache_name(layer, "resid_mid")][0]),
                "norm": norm,
            }
        )
        block: dict = {"patterns": [lower_rows(head) for head in pattern]}
        if facts["mlp"]:
            stages.append(
                {
                    "id": f"mlp{layer}",
                    "kind": "mlp",
                    "layer": layer,
                    "title": f"Block {layer} · " + ("experts" if facts["experts"] else "MLP"),
                    "shape": f"({tokens}, {d}) → ({tokens}, {d})",
                    "normed": vector_summary(cache[cache_name(layer, "ln2")][0]),
                    "add": vector_summary(cache[cache_name(layer, "mlp.out")][0]),
                    "main": vector_summary(cache[cache_name(layer, "resid_post")][0]),
                    "norm": norm,
                }
            )
            block["mlp"] = mlp_summary(cache, layer)
        blocks.append(block)
    stages.append(
        {
            "id": "final",
            "kind": "final",
            "title": f"Final {norm}",
            "shape": f"({tokens}, {d})",
            "main": vector_summary(cache["ln_f"][0]),
        }
    )
    return stages, blocks


def other_stages(cache: dict[str, torch.Tensor]) -> list[dict]:
    """A model that is no GPT (the character-level bigram, MLP, RNN, GRU, WaveNet): one stage per recorded tensor
    with a row per token, in the order the model recorded them (the order it computes them)."""
    stages: list[dict] = []
    for name, tensor in cache.items():
        if name == "logits" or tensor.dim() < 3 or tensor.shape[0] != 1:
            continue
        stages.append(
            {
                "id": f"h{len(stages)}",
                "kind": "hidden",
                "title": name,
                "shape": "(" + ", ".join(str(s) for s in tensor.shape[1:]) + ")",
                "main": vector_summary(tensor[0]),
            }
        )
    return stages


# What each step of a recurrent model reads: its own input and the previous position's hidden state h_{t−1}
RECURRENT_READS = {
    "rnn.hidden": (["embed.tok"], "h_t = tanh(W_xh x_t + W_hh h_{t−1} + b)"),
    "gru.reset_gate": (["embed.tok"], "r_t = σ(W_r x_t + U_r h_{t−1} + b_r)"),
    "gru.update_gate": (["embed.tok"], "z_t = σ(W_z x_t + U_z h_{t−1} + b_z)"),
    "gru.candidate": (["embed.tok", "gru.reset_gate"], "n_t = tanh(W_n x_t + b_n + r_t ⊙ (U_n h_{t−1} + c_n))"),
}
GRU_HIDDEN = (["gru.update_gate", "gru.candidate"], "h_t = (1 − z_t) ⊙ n_t + z_t ⊙ h_{t−1}")
COLUMNS = {
    "embed.tok": ["embed", "x_t"],
    "gru.reset_gate": ["reset", "r_t"],
    "gru.update_gate": ["update", "z_t"],
    "gru.candidate": ["cand.", "n_t"],
    "rnn.hidden": ["hidden", "h_t"],
}


def recurrent_stages(stages: list[dict], gated: bool) -> list[dict]:
    """An RNN's or a GRU's stages with what each reads (``reads``: a stage id and a position offset; −1 is the
    previous position): every gate and the new hidden state read h_{t−1}, the line that carries the state on.

    >>> stages = [{"id": "h0", "title": "embed.tok"}, {"id": "h1", "title": "rnn.hidden"}]
    >>> recurrent_stages(stages, gated=False)[1]["reads"]
    [{'stage': 'h0', 'offset': 0}, {'stage': 'h1', 'offset': -1}]
    """
    ids = {stage["title"]: stage["id"] for stage in stages}
    for stage in stages:
        stage["col"] = COLUMNS.get(stage["title"])
        reads = GRU_HIDDEN if gated and stage["title"] == "rnn.hidden" else RECURRENT_READS.get(stage["title"])
        if reads is None:
            continue
        before, formula = reads
        stage["reads"] = [{"stage": ids[name], "offset": 0} for name in before]
        stage["reads"].append({"stage": ids["rnn.hidden"], "offset": -1})
        stage["formula"] = formula
    return stages


def wavenet_stages(cache: dict[str, torch.Tensor], levels: int) -> list[dict]:
    """A WaveNet's stages as the dilated causal convolution it computes: level ``l`` at position t fuses level
    ``l − 1`` at t − 2^l and at t (the embeddings at t − 1 and t for level 0). The model recomputes each position's
    whole window; its last group is that position's own node (the earlier groups are earlier positions' nodes, or
    the padding id 0 before the text), so each stage draws the last group of the recorded tensor.

    >>> [s["reads"][0]["offset"] for s in wavenet_stages({"embed.tok": torch.zeros(1, 2, 4, 3),
    ...     "layers.0.hidden": torch.zeros(1, 2, 2, 5), "layers.1.hidden": torch.zeros(1, 2, 1, 5)}, 2)[1:]]
    [-1, -2]
    """
    embed = cache["embed.tok"][0, :, -1]  # (T, e): each position's own embedding
    stages = [
        {
            "id": "h0",
            "kind": "hidden",
            "title": "embed.tok",
            "col": ["embed", "x_t"],
            "shape": f"({embed.shape[0]}, {embed.shape[1]})",
            "main": vector_summary(embed),
        }
    ]
    for level in range(levels):
        node = cache[f"layers.{level}.hidden"][0, :, -1]  # (T, h)
        gap = 2**level
        stages.append(
            {
                "id": f"h{level + 1}",
                "kind": "hidden",
                "title": f"layers.{level}.hidden",
                "col": [f"level {level}", f"dilation {gap}"],
                "shape": f"({node.shape[0]}, {node.shape[1]})",
                "main": vector_summary(node),
                "reads": [{"stage": f"h{level}", "offset": -gap}, {"stage": f"h{level}", "offset": 0}],
                "formula": f"tanh(LayerNorm(W [a_(t−{gap}); a_t] + b)), a: the level below",
            }
        )
    return stages


def char_stages(model: nn.Module, cache: dict[str, torch.Tensor]) -> list[dict]:
    """The stages of a model that is no GPT, with the links between positions of those that have them (an RNN's
    and a GRU's hidden state carried on, a WaveNet's dilated connections)."""
    if isinstance(model, WaveNet):
        return wavenet_stages(cache, model.levels)
    stages = other_stages(cache)
    if isinstance(model, RNN):
        return recurrent_stages(stages, gated=isinstance(model, GRU))
    return stages


@torch.no_grad()
def flow_payload(model: nn.Module, tokenizer, ids: list[int], *, step: int | None = None) -> dict:
    """One forward pass of ``ids`` (their last ``MAX_FLOW_TOKENS`` that fit the context) as the flow draws it.

    Raises ConfigError for no tokens or a model that records no cache."""
    if not hasattr(model, "run_with_cache"):
        raise ConfigError(f"{type(model).__name__} records no cache: the flow needs run_with_cache.")
    kept = list(ids)[-min(MAX_FLOW_TOKENS, context_length(model)) :]
    if not kept:
        raise ConfigError("Type a sentence: there is nothing to run yet.")
    _, _, cache = model.run_with_cache(torch.tensor([kept], device=model_device(model)))  # type: ignore[operator]
    cache = {name: tensor.detach().to("cpu") for name, tensor in cache.items()}
    logits = cache["logits"][0].float()  # (T, V)
    facts = model_facts(model, int(logits.shape[-1]))
    facts["step"] = step
    tokens = len(kept)
    head = [{"id": "tokens", "kind": "tokens", "title": "Tokens", "shape": f"({tokens},)"}]
    if facts["kind"] == "gpt":
        middle, blocks = gpt_stages(cache, facts)
    else:
        middle, blocks = char_stages(model, cache), []
    vocab = f"({tokens}, {facts['vocab']})"
    tail = [
        {"id": "logits", "kind": "logits", "title": "Logits", "shape": vocab},
        {"id": "probs", "kind": "probs", "title": "Next-token probabilities", "shape": vocab},
    ]
    return {
        "v": FLOW_VERSION,
        "model": facts,
        "ids": kept,
        "tokens": [printable(tokenizer, i) for i in kept],
        "cut": len(ids) - len(kept),
        "stages": head + middle + tail,
        "blocks": blocks,
        "next": next_tokens(logits, tokenizer),
        "last": last_logits(logits, tokenizer),
    }


def flow_words(payload: dict, most: int = 3) -> str:
    """The flow's text alternative, from the payload it draws: the tokens and stages, the model's most likely next
    tokens after the last one, and (a transformer) where the last token looks most in the last block, per head.

    >>> payload = {"tokens": ["a", "b"], "stages": [{}] * 5, "next": {"tokens": [["x"], ["y", "z"]],
    ...     "probs": [[1.0], [0.6, 0.3]]}, "blocks": [{"patterns": [[[1.0], [0.25, 0.75]]]}]}
    >>> for sentence in flow_words(payload).split(". "):
    ...     print(sentence)
    One forward pass of 2 tokens through 5 stages
    After "b" the model predicts "y" 0.6 and "z" 0.3
    In the last block the last token looks most at "b" (0.75, head 0).
    """
    tokens = payload["tokens"]
    said = [f"One forward pass of {len(tokens)} tokens through {len(payload['stages'])} stages."]
    top = payload["next"]
    likely = words.ranked(top["tokens"][-1], top["probs"][-1], most)
    said.append(f"After {words.quoted(tokens[-1])} the model predicts {likely}.")
    if payload.get("blocks"):
        looks = []
        for head, pattern in enumerate(payload["blocks"][-1]["patterns"]):
            row = pattern[-1]
            key = max(range(len(row)), key=lambda j: row[j])
            looks.append(f"{words.quoted(tokens[key])} ({words.number(row[key])}, head {head})")
        said.append(f"In the last block the last token looks most at {words.listed(looks)}.")
    return " ".join(said)


def payload_bytes(payload: dict) -> int:
    """The payload's size as JSON (what the browser receives), in bytes.

    >>> payload_bytes({"a": [1.5]})
    11
    """
    return len(json.dumps(payload, separators=(",", ":")).encode())
