"""The Attention page's numbers (stages/attention.py wires them, ui/panels/attention.py draws them): the patterns of
a sentence through a model, the quiz on them, the masks side by side and the KV cache of grouped-query attention.

No streamlit here: every function takes plain values and returns tensors, rows or questions.
"""

from __future__ import annotations

import torch
from torch import nn

from llmviz.adapt import memory
from llmviz.lessons import architectures, forward, quiz, words
from llmviz.models import attention
from llmviz.models.gpt import GPTConfig
from llmviz.models.presets import PRESETS, PresetName
from llmviz.tokenizers.ids import encode

# the masks lesson's encoder output: 4 tokens of a made-up French sentence, the page's own (seeded) numbers
ENCODER_TOKENS = ["Le", "chat", "était", "assis"]


def patterns_for(model: nn.Module, tokenizer, sentence: str) -> forward.AttentionPatterns | None:
    """Every attention pattern of ``model`` on ``sentence`` (None for a model without attention)."""
    return forward.attention_patterns(model, encode(tokenizer, sentence))


def quiz_questions(
    model: nn.Module, tokenizer, found: forward.AttentionPatterns, layer: int, head: int
) -> list[quiz.Question]:
    """The Attention quiz on the sentence of ``found``, read from the model's own cache of one recorded forward pass
    (its names are the model's, ``cache_name(layer, "attn.pattern")``); layer and head are clamped to the model's."""
    with torch.no_grad():
        cache = forward.recorded_pass(model, found.ids)
    labels = [tokenizer.printable(i) for i in found.ids]
    return quiz.attention_questions(cache, labels, min(layer, found.n_layers - 1), min(head, found.n_heads - 1))


def head_split_example() -> dict[str, torch.Tensor]:
    """A (1, 3, 8) input split into 2 heads: ``input``, ``viewed`` (1, 3, 2, 4) and ``transposed`` (1, 2, 3, 4).

    >>> tuple(head_split_example()["transposed"].shape)
    (1, 2, 3, 4)
    """
    return attention.head_split_steps(torch.arange(24, dtype=torch.float32).view(1, 3, 8), num_heads=2)


def mask_variants() -> dict[str, tuple[torch.Tensor, list[str], list[str]]]:
    """The toy example's X with W_Q = W_K = W_V = the identity under four masks: name → (weights (T_q, T_k), key
    labels, query labels).

    >>> {name: tuple(w.shape) for name, (w, _, _) in mask_variants().items()}["cross-attention"]
    (3, 4)
    """
    x = attention.toy_input()
    encoder_out = torch.randn(4, 4, generator=torch.Generator().manual_seed(1)) * 0.5  # the page's own stream
    padding = torch.tensor([[True, True, False]])  # the last token is padding
    eye = torch.eye(4)
    padded = [*attention.TOY_TOKENS[:-1], "[PAD]"]  # the padding variant's last token is padding, not "sat"
    tokens = list(attention.TOY_TOKENS)
    variants = {
        "none": (attention.attention_steps(x, eye, eye, eye), tokens, tokens),
        "causal": (attention.attention_steps(x, eye, eye, eye, mask="causal"), tokens, tokens),
        "padding (last is [PAD])": (attention.attention_steps(x, eye, eye, eye, padding_mask=padding), padded, padded),
        "cross-attention": (attention.attention_steps(x, eye, eye, eye, kv=encoder_out), ENCODER_TOKENS, tokens),
    }
    return {name: (steps["weights"][0], keys, queries) for name, (steps, keys, queries) in variants.items()}


def kv_owner(config: GPTConfig) -> list[int]:
    """For each query head, the key/value head it reads.

    >>> kv_owner(GPTConfig(d_model=64 * 4, n_heads=4, n_kv_heads=2, n_layers=1))
    [0, 0, 1, 1]
    """
    groups = architectures.kv_groups(config)
    return [[j for j, heads in enumerate(groups) if h in heads][0] for h in range(config.n_heads)]


def kv_cache_rows(config: GPTConfig, tokens: int) -> list[dict[str, object]]:
    """The KV cache of ``config``'s shape with as many key/value heads as query heads, with its own, and with one:
    the table of the Grouped-query lesson (bf16)."""
    rows = []
    n_heads, n_kv_heads = config.n_heads, config.kv_heads
    for kv in sorted({n_heads, n_kv_heads, 1}, reverse=True):
        shape = config.replace(n_kv_heads=kv)
        rows.append(
            {
                "attention": architectures.attention_kind(shape) + (" (picked)" if kv == n_kv_heads else ""),
                "K/V heads": kv,
                "KV cache per token": memory.human_bytes(architectures.kv_cache_bytes(shape, 1, "bf16")),
                f"for {tokens:,} tokens": memory.human_bytes(architectures.kv_cache_bytes(shape, tokens, "bf16")),
                "W_K + W_V per layer": f"{2 * config.d_model * kv * config.head_dim:,}",
            }
        )
    return rows


def real_models_kv(names: tuple[PresetName, ...] = ("gpt2-124m", "smollm2-135m-shapes")) -> str:
    """Real models' key/value heads and their KV cache per token (bf16).

    >>> real_models_kv(("gpt2-124m",))
    'gpt2-124m: 12 of 12 heads, 36.0 KiB per token'
    """
    return "; ".join(
        f"{name}: {PRESETS[name].kv_heads} of {PRESETS[name].n_heads} heads, "
        f"{memory.human_bytes(architectures.kv_cache_bytes(PRESETS[name], 1, 'bf16'))} per token"
        for name in names
    )


def steps_words(scores: torch.Tensor, scaled_scores: torch.Tensor, masked: torch.Tensor, d_k: int) -> str:
    """The first three steps of one head in words: the raw scores' range, the range after dividing by √d_k (or
    not), and how many cells the mask sets to −∞.

    >>> scores = torch.tensor([[4.0, -2.0], [1.0, 3.0]])
    >>> masked = torch.tensor([[2.0, float("-inf")], [0.5, 1.5]])
    >>> print(steps_words(scores, scores / 2, masked, 4))
    Q Kᵀ: scores from -2 to 4. ÷ √4 = 2: from -1 to 2. Masked: 1 of 4 cells set to −∞ (blank), a key after its query.
    """
    finite = masked[torch.isfinite(masked)]
    hidden = int((~torch.isfinite(masked)).sum())
    divided = not torch.equal(scores, scaled_scores)
    scale = f"÷ √{d_k} = {words.number(d_k**0.5)}" if divided else "Not scaled"
    mask = (
        f"Masked: {hidden} of {masked.numel()} cells set to −∞ (blank), a key after its query."
        if hidden
        else f"No mask: all {masked.numel()} cells kept, from {words.number(float(finite.min()))}."
    )
    return (
        f"Q Kᵀ: scores from {words.number(float(scores.min()))} to {words.number(float(scores.max()))}. {scale}: "
        f"from {words.number(float(scaled_scores.min()))} to {words.number(float(scaled_scores.max()))}. {mask}"
    )


def pattern_words(pattern, labels: list[str], most: int = 6) -> str:
    """An attention pattern (queries × keys, each row summing to 1) in words: where each token looks most, and
    how much weight it puts there; past ``most`` rows, the last ``most`` (the later tokens see more to choose from).

    >>> pattern_words(torch.tensor([[1.0, 0.0], [0.7, 0.3]]), ["The", "cat"])
    'Where each token looks most: "The" at "The" (1), "cat" at "The" (0.7).'
    """
    weights = torch.as_tensor(pattern, dtype=torch.float64)
    rows = range(max(0, weights.shape[0] - most), weights.shape[0])
    looks = [
        f"{words.quoted(labels[i])} at {words.quoted(labels[j])} ({words.number(float(weights[i, j]))})"
        for i in rows
        for j in [int(torch.argmax(weights[i]))]
    ]
    which = "each token" if weights.shape[0] <= most else f"each of the last {most} of {weights.shape[0]} tokens"
    return f"Where {which} looks most: {', '.join(looks)}."


def head_means(patterns) -> dict[str, torch.Tensor]:
    """Each head's mean weight, over the queries from the third token on (for the second, the previous token is the
    first), on the previous token, the first token and itself: (layers, heads) per kind. Empty under three tokens.

    >>> {kind: means.tolist() for kind, means in head_means(torch.eye(3).expand(1, 1, 3, 3)).items()}
    {'the previous token': [[0.0]], 'the first token': [[0.0]], 'itself': [[1.0]]}
    """
    weights = torch.as_tensor(patterns, dtype=torch.float64)
    tokens = weights.shape[-1]
    if tokens < 3:
        return {}
    queries = torch.arange(2, tokens)
    return {
        "the previous token": weights[..., queries, queries - 1].mean(-1),
        "the first token": weights[..., queries, 0].mean(-1),
        "itself": weights[..., queries, queries].mean(-1),
    }


def head_kinds(patterns) -> dict[str, tuple[int, int, float]]:
    """Which head of a (layers, heads, T, T) stack of patterns attends most to the previous token, to the first
    token, and to itself (:func:`head_means`): each kind's (layer, head, mean weight).

    >>> stack = torch.zeros(1, 2, 3, 3)
    >>> stack[0, 0] = torch.tensor([[1.0, 0, 0], [1, 0, 0], [0, 1, 0]])  # head 0: the previous token
    >>> stack[0, 1] = torch.eye(3)  # head 1: itself
    >>> {kind: found[:2] for kind, found in head_kinds(stack).items()}
    {'the previous token': (0, 0), 'the first token': (0, 0), 'itself': (0, 1)}
    """
    found = {}
    for kind, means in head_means(patterns).items():
        best = int(torch.argmax(means))
        layer, head = divmod(best, means.shape[1])
        found[kind] = (layer, head, float(means[layer, head]))
    return found


def head_rows(patterns) -> list[dict[str, float | int]]:
    """Every head at a glance as a table's rows: its layer, its head and its three mean weights (:func:`head_means`).

    >>> head_rows(torch.eye(3).expand(1, 1, 3, 3))
    [{'layer': 0, 'head': 0, 'the previous token': 0.0, 'the first token': 0.0, 'itself': 1.0}]
    """
    means = head_means(patterns)
    if not means:
        return []
    layers, heads = next(iter(means.values())).shape
    return [
        {"layer": layer, "head": head, **{kind: float(m[layer, head]) for kind, m in means.items()}}
        for layer in range(layers)
        for head in range(heads)
    ]


def heads_words(patterns) -> str:
    """Every head at a glance in words: the head that attends most to the previous token, to the first, to itself.

    >>> heads_words(torch.eye(3).expand(1, 1, 3, 3))[-43:]
    'layer 0 head 0 at itself (1 of its weight).'
    """
    kinds = head_kinds(patterns)
    if not kinds:
        return "Too few tokens to tell the heads apart."
    said = [
        f"layer {layer} head {head} at {kind} ({words.number(mean)} of its weight)"
        for kind, (layer, head, mean) in kinds.items()
    ]
    return "On average, the heads that look most: " + words.listed(said) + "."


def masks_words(variants: dict[str, list[list[float]]]) -> str:
    """The weights under each mask in words (``variants``: name → its weights, queries × keys): how many weights each
    mask sets to 0 (a weight below 10⁻⁶) of all of them.

    >>> masks_words({"none": [[0.5, 0.5], [0.4, 0.6]], "causal": [[1.0, 0.0], [0.4, 0.6]]})
    'Weights that are 0 under each mask: none 0 of 4; causal 1 of 4 (2 queries × 2 keys each).'
    """
    said = []
    for name, weights in variants.items():
        cells = [v for row in weights for v in row]
        said.append(f"{name} {sum(1 for v in cells if abs(v) < 1e-6)} of {len(cells)}")
    square = {(len(w), len(w[0]) if w else 0) for w in variants.values()}
    shapes = f" ({' or '.join(f'{q} queries × {k} keys' for q, k in sorted(square))} each)"
    return f"Weights that are 0 under each mask: {'; '.join(said)}{shapes}."


def kv_words(owner: list[int]) -> str:
    """Which key/value head each query head reads, in words: how many query heads share how many key/value heads, and
    each key/value head's readers.

    >>> kv_words([0, 0, 1, 1])
    '4 query heads share 2 key/value heads, 2 each: K0 V0 is read by Q0 and Q1; K1 V1 by Q2 and Q3.'
    """
    groups: dict[int, list[int]] = {}
    for query, kv in enumerate(owner):
        groups.setdefault(kv, []).append(query)
    sizes = sorted({len(readers) for readers in groups.values()})
    each = f"{sizes[0]} each" if len(sizes) == 1 else "unequally"
    named = [
        f"K{kv} V{kv} {'is read by' if n == 0 else 'by'} {words.listed([f'Q{q}' for q in readers])}"
        for n, (kv, readers) in enumerate(sorted(groups.items()))
    ]
    return f"{len(owner)} query heads share {len(groups)} key/value heads, {each}: {'; '.join(named)}."
