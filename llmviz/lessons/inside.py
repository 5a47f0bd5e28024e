"""The numbers the Inside-the-model page shows (``stages/inside.py``, drawn by ``ui/panels/inside.py``): the texts it
opens on, the token ids it reads, and the logit lens, head scores, per-token losses and steering it asks
``llmviz.interpret`` for with the page's own settings (top 5, a 20-token test input, temperature 0.8).

>>> head_name((1, 3))
'layer 1, head 3'
"""

from __future__ import annotations

import torch

from llmviz.interpret import heads, lens, steering
from llmviz.tokenizers.base import TokenizerError
from llmviz.tokenizers.char_word import CharTokenizer

# sentences of the shipped GPT's corpus (the Python reference manual, pydoc_data.topics)
DEFAULT_SENTENCE = 'The "for" statement is used to iterate over the elements of a sequence'
DEFAULT_LOSS_TEXT = (
    "Lists are mutable sequences, typically used to store collections of homogeneous items (where the precise "
    "degree of similarity will vary by application)."
)
DEFAULT_ABLATION_TEXT = 'The "while" statement is used for repeated execution as long as an expression is true.'
DEFAULT_CLEAN = 'The "for" statement is used to iterate over the elements of a'
DEFAULT_CORRUPTED = 'The "if" statement is used to iterate over the elements of a'
DEFAULT_STEER_PROMPT = "The"
DEFAULT_POSITIVE = 'The "for" statement\nThe "while" statement\nThe "if" statement'
DEFAULT_NEGATIVE = "Lists are mutable sequences\nTuples are immutable sequences\nStrings are immutable sequences"
MAX_TOKENS = 64  # positions shown in the lens grid and the per-token loss
TOP = 5  # predictions listed for each position (the lens's hover, the loss's tooltip)
HALF_LENGTH = 20  # the head detectors' test input: this many random tokens, repeated twice
NEW_TOKENS = 30  # written with and without steering
STEER_TEMPERATURE = 0.8
STEER_PROMPTS = 20  # prompts read from each of the two steering sets, at most


def tokens_of(tokenizer, config, text: str, limit: int) -> tuple[list[int], str | None]:
    """Token ids of ``text`` (at most ``limit``, and at most the context), and a note to show, if any.

    A character-level run (the induction run) cannot read characters it never saw: a random sequence of its own
    tokens, repeated twice, stands in, and the note says so (it is not a failure of the server).

    >>> from types import SimpleNamespace
    >>> tokens_of(CharTokenizer.train("abc"), SimpleNamespace(context_length=2, vocab_size=3), "abc", 8)
    ([0, 1], 'Only the first 2 of its 3 tokens are shown.')
    """
    try:
        ids = tokenizer.encode(text)
    except TokenizerError as error:
        half = min(16, config.context_length // 2, config.vocab_size)
        ids = heads.diagnostic_tokens(config.vocab_size, half, seed=0)
        return ids, (
            f"This model's tokenizer cannot read that text ({error}), so a random sequence of its own "
            "tokens, repeated twice, is shown instead: type text made of the characters it knows."
        )
    limit = min(limit, config.context_length)
    if len(ids) > limit:
        return ids[:limit], f"Only the first {limit} of its {len(ids)} tokens are shown."
    return ids, None


def exact_ids(tokenizer, config, text: str, what: str) -> list[int]:
    """The token ids of ``text`` for an intervention (no stand-in: a text the model cannot read is refused).

    >>> from types import SimpleNamespace
    >>> exact_ids(CharTokenizer.train("abc"), SimpleNamespace(context_length=8), "cab", "prompt")
    [2, 0, 1]
    """
    if isinstance(tokenizer, CharTokenizer) and tokenizer.unknown_characters(text):
        unknown = "".join(tokenizer.unknown_characters(text)[:10])
        raise TokenizerError(f"The {what} has characters this model never saw ({unknown!r}): type others.")
    ids = tokenizer.encode(text)
    if len(ids) > config.context_length:
        raise TokenizerError(
            f"The {what} is {len(ids)} tokens long; this model reads {config.context_length}: shorten it."
        )
    return ids


def one_token(tokenizer, config, typed: str, what: str) -> int:
    """The one token ``typed`` is (an answer, a wrong token); a text of several tokens is refused, naming them."""
    ids = exact_ids(tokenizer, config, typed, what)
    if len(ids) != 1:
        pieces = " + ".join(tokenizer.printable(int(i)) for i in ids)
        raise TokenizerError(f"The {what} must be one token; {typed!r} is {len(ids)} ({pieces}).")
    return ids[0]


def head_name(pair: tuple[int, int]) -> str:
    return f"layer {pair[0]}, head {pair[1]}"


def logit_lens(model, ids: list[int]) -> lens.LogitLens:
    """Every block's prediction at every position, with the top :data:`TOP`."""
    return lens.sequence_logit_lens(model, list(ids), k=TOP)


def echoes_itself(found: lens.LogitLens, ids: list[int]) -> tuple[float, float]:
    """The embedding row of the lens: the share of positions whose top prediction is the token itself, and the mean
    probability it gives it there. With a tied head (W_U = the embedding table) a token's vector scores highest
    against its own row, so that row mostly "predicts" the token it reads.

    >>> top, probs = torch.tensor([[[7], [3]]]), torch.tensor([[[0.75], [0.5]]])  # (1 row, 2 positions, top 1)
    >>> found = lens.LogitLens(["embed"], top, probs, torch.zeros(1, 1))
    >>> echoes_itself(found, [7, 4])
    (0.5, 0.75)
    """
    top, probs = found.top_ids[0, :, 0], found.top_probs[0, :, 0]  # (T,), (T,)
    itself = top == torch.tensor(ids)  # (T,)
    share = float(itself.float().mean())
    return share, float(probs[itself].mean()) if bool(itself.any()) else 0.0


def head_scores(model) -> tuple[list[int], dict]:
    """The test input (:data:`HALF_LENGTH` random tokens, twice) and every detector's (L, H) scores on it."""
    return heads.model_head_scores(model, half_length=HALF_LENGTH, seed=0)


def token_losses(model, ids: list[int]) -> lens.TokenLosses:
    """The loss on every next token of ``ids``, with the top :data:`TOP` predictions at each position."""
    return lens.token_losses(model, list(ids), k=TOP)


def uniform_score(kind: str, tokens: list[int]) -> float:
    """The score of a head that spreads its attention evenly over the positions it can see (the chance level).

    >>> round(uniform_score("first token", [5, 6, 7]), 4)  # (1/2 + 1/3) / 2: query 0 has no earlier key
    0.4167
    """
    size = len(tokens)
    uniform = torch.tril(torch.ones(size, size))  # (T, T)
    uniform = uniform / uniform.sum(-1, keepdim=True)  # (T, T), rows sum to 1
    return float(heads.detector_score(uniform, heads.detector_mask(kind, tokens)))


def clearest_detector(scores: dict, tokens: list[int]) -> str:
    """The detector whose best head stands furthest above a head attending evenly: the one that shows a head."""
    return max(heads.DETECTORS, key=lambda kind: float(scores[kind].max()) - uniform_score(kind, tokens))


def best_heads(values: torch.Tensor, count: int = 3) -> list[tuple[float, int, int]]:
    """The ``count`` highest ``(score, layer, head)`` of an (L, H) grid, highest first.

    >>> best_heads(torch.tensor([[0.1, 0.9], [0.5, 0.2]]), 2)
    [(0.8999999761581421, 0, 1), (0.5, 1, 0)]
    """
    layers, heads_per_layer = values.shape
    cells = ((float(values[layer, head]), layer, head) for layer in range(layers) for head in range(heads_per_layer))
    return sorted(cells, reverse=True)[:count]


def prompt_lines(text: str) -> list[str]:
    """The non-blank lines of a steering set, at most :data:`STEER_PROMPTS`.

    >>> prompt_lines("a\\n\\n b\\n")
    ['a', ' b']
    """
    return [line for line in (text or "").splitlines() if line.strip()][:STEER_PROMPTS]


def mean_difference(model, positive: list[list[int]], negative: list[list[int]], layer: int) -> torch.Tensor:
    """The steering direction: the mean residual stream of ``positive`` minus that of ``negative`` at ``layer``."""
    return steering.mean_difference(model, positive, negative, layer)


def steered_pair(model, ids: list[int], layer: int, direction: torch.Tensor, alpha: float, seed: int):
    """:data:`NEW_TOKENS` written with and without ``alpha`` × ``direction`` added, the same seed for both."""
    return steering.steered_pair(model, list(ids), layer, direction, alpha, NEW_TOKENS, STEER_TEMPERATURE, seed)
