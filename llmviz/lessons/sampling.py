"""The numbers the Sampling page shows (``stages/sampling.py``, drawn by ``ui/panels/sampling.py``): the next-token
distribution transform by transform, beam search's tree, one step at a time, three temperatures, each with the
page's own settings. What :mod:`llmviz.generation.sampling` gives as the page needs it (the next-token view,
generation, the KV-cache comparison) the page imports from there: a lesson adds numbers, never a forward.

>>> method_temperature("greedy", 0.8), method_temperature("sampling", 0.8)
(0.0, 0.8)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch.nn as nn

from llmviz.errors import LlmvizError
from llmviz.generation import sampling
from llmviz.generation.sampling import BeamResult, Distribution, StepRecord
from llmviz.lessons import words

BEAM_TOKENS = 12  # the depth of the beam-search tree the page draws
CANDIDATES = 10  # the raw model's top tokens step mode lists
TEMPERATURE_TOKENS = 60  # written at each of the three temperatures
METHODS = ("sampling", "greedy", "beam search")


def top_k_default(vocab_size: int) -> int:
    """Top-k's opening value: 10, or the whole vocabulary when it is smaller.

    >>> top_k_default(50257), top_k_default(7)
    (10, 7)
    """
    return min(10, vocab_size)


def method_temperature(method: str, temperature: float) -> float:
    """The temperature a method samples at: greedy is temperature 0, the others the slider's."""
    return 0.0 if method == "greedy" else temperature


def transforms(distribution: Distribution, temperature: float, top_k: int, top_p: float) -> list[tuple[str, object]]:
    """The four panels: each transform's title and the probabilities after it, in the order they apply."""
    return [
        ("raw softmax", distribution.raw_probs),
        (f"temperature {temperature:g}", distribution.temperature_probs),
        (f"top-k {top_k or 'off'}", distribution.top_k_probs),
        (f"top-p {top_p:g}", distribution.final_probs),
    ]


def window_note(model: nn.Module, prompt_tokens: int, new_tokens: int) -> str | None:
    """What happens when the text outgrows the model's window (None while it fits)."""
    limit, keep = sampling.visible_tokens(model), sampling.shift_keep(model)
    if prompt_tokens + new_tokens <= limit:
        return None
    return (
        f"This model sees at most {limit} tokens: when the text outgrows that, the window keeps its last "
        f"{keep} and goes on" + (" (a context shift)." if keep < limit else " (it slides by one token).")
    )


def beam(model: nn.Module, ids: list[int], width: int, new_tokens: int) -> BeamResult:
    """Beam search, at most :data:`BEAM_TOKENS` deep (the tree the page draws must fit it)."""
    return sampling.beam_search(model, ids, width=width, max_new_tokens=min(new_tokens, BEAM_TOKENS))


@dataclass(frozen=True)
class BeamTree:
    """Where the page draws each node of a beam search: ``layout[node_id] = (depth, row)``; ``edges[kept]`` the
    (parent, child) pairs off the winning path, kept in the beam or pruned; ``winners`` the winning path's ids."""

    layout: dict[int, tuple[int, float]]
    winners: list[int]
    edges: dict[bool, list[tuple[int, int]]]
    widest: int  # the most nodes at one depth


def beam_tree(result: BeamResult) -> BeamTree:
    """The beam-search tree laid out with no crossing edges (:func:`llmviz.generation.sampling.beam_layout`)."""
    winners = sampling.beam_path(result)
    on_path = set(winners)
    edges: dict[bool, list[tuple[int, int]]] = {False: [], True: []}
    for node in result.nodes:
        if node.parent is not None and node.node_id not in on_path:
            edges[node.kept].append((node.parent, node.node_id))
    widest = max(
        (sum(1 for n in result.nodes if n.depth == d) for d in range(1, result.nodes[-1].depth + 1)), default=1
    )
    return BeamTree(sampling.beam_layout(result), winners, edges, widest)


def next_step(
    model: nn.Module, sequence: list[int], temperature: float, top_k: int, top_p: float, seed: int
) -> StepRecord:
    """One step of step mode: the token drawn after ``sequence`` (its seed moves on with the sequence's length)."""
    return next(sampling.generate(model, sequence, 1, temperature, top_k, top_p, seed=seed + len(sequence)))


def top_candidates(record: StepRecord) -> list[tuple[int, float, float, bool]]:
    """The raw model's top :data:`CANDIDATES` (whatever top-k and top-p cut: its real runner-ups, never
    probability-0 padding): ``(token, raw probability, probability after the transforms, can be sampled)``."""
    final = record.distribution.final_probs
    return [(t, p, float(final[t]), ok) for t, p, ok in sampling.raw_top(record.distribution, CANDIDATES)]


def at_temperatures(
    model: nn.Module, tokenizer, prompt: str, temperatures: list[float], top_k: int, top_p: float, seed: int
) -> dict[float, str]:
    """The same prompt continued at each temperature, with the same seed (an error becomes that column's text)."""
    outputs = {}
    for t in temperatures:
        try:
            outputs[t] = sampling.generate_text(
                model, tokenizer, prompt, TEMPERATURE_TOKENS, temperature=t, top_k=top_k, top_p=top_p, seed=seed
            )
        except LlmvizError as error:
            outputs[t] = f"(error: {error})"
    return outputs


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first position where two token lists differ (None when one is the start of the other).

    >>> first_difference([1, 2, 3], [1, 5, 3]), first_difference([1, 2], [1, 2, 3])
    (1, None)
    """
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)


def next_token_words(labels: list[str], probabilities: list[float], most: int = 3) -> str:
    """A next-token bar chart in words: its ``most`` likely tokens with their probabilities, and how many of the
    drawn tokens can still be chosen (a filter such as top-k sets the others to 0).

    >>> next_token_words([" the", " a", " of"], [0.31, 0.12, 0.0])
    'Most likely next: " the" 0.31, " a" 0.12 and " of" 0; 2 of the 3 tokens drawn can be chosen.'
    """
    kept = sum(1 for p in probabilities if p > 0)
    return (
        f"Most likely next: {words.ranked(labels, probabilities, most)}; {kept} of the {len(labels)} tokens drawn "
        "can be chosen."
    )


def beam_words(width: int, groups: dict[str, int], path: list[str], score: float) -> str:
    """Beam search's tree in words: how many candidates it expanded, how many each group holds (``groups``: the
    legend's name → its count), and the winning path with its score (the sum of its tokens' log-probabilities).

    >>> beam_words(2, {"pruned": 5, "kept in the beam": 2, "winning path": 3}, ["a", " b", "c"], -2.5)
    'Beam width 2: 10 candidates expanded (pruned 5, kept in the beam 2, winning path 3). The winning path "a", " b" \
and "c" scores -2.5.'
    """
    counts = ", ".join(f"{name} {count}" for name, count in groups.items())
    return (
        f"Beam width {width}: {sum(groups.values())} candidates expanded ({counts}). The winning path "
        f"{words.listed([words.quoted(token) for token in path])} scores {words.number(score)}."
    )
