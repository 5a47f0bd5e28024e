"""The numbers the Inside-the-model page shows (``stages/inside.py``, drawn by ``ui/panels/inside.py``): the texts it
opens on, the token ids it reads, and the logit lens, head scores, per-token losses and steering it asks
``llmviz.interpret`` for with the page's own settings (top 5, a 20-token test input, temperature 0.8), and the
Features tab's numbers: a sparse autoencoder's features over the corpus (``llmviz.interpret.features``).

>>> head_name((1, 3))
'layer 1, head 3'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from llmviz.interpret import features, heads, lens, patching, steering
from llmviz.interpret.sae import (
    POINTS,
    SaeConfig,
    SparseAutoencoder,
    build_trainer,
    corpus_windows,
    gather_activations,
    model_identity,
)
from llmviz.lessons import words
from llmviz.models.gpt import block_points, cache_name
from llmviz.tokenizers.base import TokenizerError
from llmviz.tokenizers.char_word import CharTokenizer

# sentences of the shipped GPT's corpus (the Python reference manual, pydoc_data.topics)
DEFAULT_SENTENCE = 'The "for" statement is used to iterate over the elements of a sequence'
DEFAULT_LOSS_TEXT = (
    "Lists are mutable sequences, typically used to store collections of homogeneous items (where the precise "
    "degree of similarity will vary by application)."
)
DEFAULT_ABLATION_TEXT = 'The "while" statement is used for repeated execution as long as an expression is true.'
# the patching pair: on the shipped GPT the clean prompt's most likely next token is " function" and the corrupted
# one's " coroutine" (two words a student reads: the library's pair, "class", answers with a quote mark), and the
# picture shows the answer move from the keyword at layer 0 to the last position by the last layer
DEFAULT_CLEAN = patching.DEFAULT_CLEAN
DEFAULT_CORRUPTED = 'The "yield" statement defines a'
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


def steered_pair(model, ids: list[int], layer: int, direction: torch.Tensor, alpha: float, seed: int):
    """:data:`NEW_TOKENS` written with and without ``alpha`` × ``direction`` added, the same seed for both."""
    return steering.steered_pair(model, list(ids), layer, direction, alpha, NEW_TOKENS, STEER_TEMPERATURE, seed)


# ------------------------------------------------------------------ features: a sparse autoencoder's dictionary
FEATURE_TOKENS = 8_192  # corpus tokens the feature browser reads (64 windows of the shipped GPT's 128)
FEATURE_TOP = 24  # top activations kept per feature: the distinct places (features.places) are picked from them
FEATURE_CONTEXTS = 6  # shown for the picked feature
FEATURE_ROWS = 40  # features listed, the most readable first (features.readable_order)
FEATURE_BINS = 30
FEATURE_LOGITS = 8  # tokens promoted and suppressed
MAX_CORPUS_CHARS = 8 * FEATURE_TOKENS + 8192  # the corpus text tokenized (≤ 8 characters a token, as the CLI reads)
MAX_FEATURE_TEXT = 2000  # the search text and the knock-out text, in characters
#: the characters of each of the page's text boxes it uses (a box takes ten times more, and says what it cut:
#: ui.boxes): the lens's sentence, the per-token loss's text, the knock-out text, patching's two prompts, steering's
#: prompt and its two sets of prompts, the feature search, the feature-steered prompt and the feature knock-out text
TEXT_LIMITS = {
    "lens_text": 2000,
    "loss_text": 20_000,
    "ablate_text": 4000,
    "patch_clean": 1000,
    "patch_corrupted": 1000,
    "steer_prompt": 500,
    "steer_positive": 2000,
    "steer_negative": 2000,
    "feature_search": MAX_FEATURE_TEXT,
    "feature_prompt": 500,
    "feature_text": MAX_FEATURE_TEXT,
}
DEFAULT_FEATURE_SEARCH = 'The "for" statement is used to iterate over the elements of a sequence'
DEFAULT_FEATURE_PROMPT = "The"
# what a student's own autoencoder is trained with from the page (the CLI's defaults, shorter)
SAE_SIZES = (256, 512, 1024, 2048, 4096)
SAE_TRAIN_TOKENS = 16_384
SAE_TRAIN_STEPS = 300


def feature_corpus_ids(tokenizer, text: str) -> list[int]:
    """The corpus's token ids for the browser: only its first :data:`MAX_CORPUS_CHARS` characters are tokenized.

    >>> feature_corpus_ids(CharTokenizer.train("ab"), "ab" * 10**6)[:3], MAX_CORPUS_CHARS
    ([0, 1, 0], 73728)
    """
    return tokenizer.encode(text[:MAX_CORPUS_CHARS])


@dataclass(frozen=True)
class FeatureCorpus:
    """The corpus tokens the browser reads: ``ids`` (N,), whole windows of ``window`` tokens laid end to end, the
    activations at the hook ``acts`` (N, d_in), every feature's :class:`llmviz.interpret.features.FeatureIndex` over
    them, and the features in the order the browser lists them (:func:`llmviz.interpret.features.readable_order`)."""

    ids: torch.Tensor
    acts: torch.Tensor
    index: features.FeatureIndex
    window: int
    order: list[int]


def feature_corpus(model, sae: SparseAutoencoder, hook: str, ids: list[int], tokens: int = FEATURE_TOKENS):
    """Whole windows of the corpus (:func:`llmviz.interpret.sae.corpus_windows`), their activations at ``hook`` and
    the index of ``sae``'s features over them: what ``interpret sae features --tokens 8192`` reads."""
    windows = corpus_windows(ids, model.config.context_length, tokens)  # (W, T)
    acts = gather_activations(model, windows, hook).reshape(-1, sae.d_in)  # (N, D)
    flat, window = windows.reshape(-1), windows.shape[1]  # (N,)
    index = features.feature_index(sae, acts, top=FEATURE_TOP)
    return FeatureCorpus(flat, acts, index, window, features.readable_order(index, flat, window=window))


def feature_rows(corpus: FeatureCorpus, labels: dict[int, str], count: int = FEATURE_ROWS) -> list[dict]:
    """The first ``count`` features of the browser's order (the most readable first): number, the share of tokens it
    fires on, its mean activation there, its largest activation, and the student's label."""
    index = corpus.index
    return [
        {
            "feature": f,
            "fires on": float(index.frequency[f]),
            "mean when firing": float(index.mean[f]),
            "max": float(index.top_values[f, 0]),
            "label": labels.get(f, ""),
        }
        for f in corpus.order[:count]
    ]


@dataclass(frozen=True)
class FeatureCard:
    """One feature as the browser shows it: where it fires most, its histogram, the tokens it writes towards."""

    feature: int
    frequency: float
    contexts: list[features.Context]
    counts: torch.Tensor  # (bins,) tokens per bin, where it fires
    edges: torch.Tensor  # (bins + 1,)
    effects: features.LogitEffects


def feature_card(model, sae: SparseAutoencoder, hook: str, corpus: FeatureCorpus, feature: int) -> FeatureCard:
    found = features.contexts(
        sae, corpus.acts, corpus.ids, corpus.index, feature, count=FEATURE_CONTEXTS, window=corpus.window
    )
    values = features.feature_values(sae, corpus.acts, feature)  # (N,)
    counts, edges = features.histogram(values, bins=FEATURE_BINS)
    effects = features.logit_effects(model, sae, hook, feature, top=FEATURE_LOGITS)
    return FeatureCard(feature, float(corpus.index.frequency[feature]), found, counts, edges, effects)


def bounded_text(text: str, what: str) -> str:
    """A text the tab reads, refused above :data:`MAX_FEATURE_TEXT` characters (before it is tokenized).

    >>> bounded_text("abc", "search text")
    'abc'
    """
    if len(text or "") > MAX_FEATURE_TEXT:
        raise TokenizerError(f"The {what} is longer than {MAX_FEATURE_TEXT:,} characters: shorten it.")
    return text or ""


def feature_search(model, sae: SparseAutoencoder, hook: str, ids: list[int]) -> features.Search:
    """Which features fire on ``ids``: the 5 strongest at every token, and the strongest over the text."""
    return features.search(model, sae, hook, list(ids), top=TOP)


def feature_steer(model, sae: SparseAutoencoder, hook: str, ids: list[int], feature: int, alpha: float, seed: int):
    """:data:`NEW_TOKENS` written with and without α × the feature's decoder row added at its hook point."""
    return features.steer(model, sae, hook, list(ids), feature, alpha, NEW_TOKENS, STEER_TEMPERATURE, seed)


def hook_points(config) -> dict[str, tuple[int, str]]:
    """Every hook point an autoencoder can read in a GPT of ``config``: its name (``cache_name``) → (layer, point).

    >>> from llmviz.models.presets import PRESETS
    >>> list(hook_points(PRESETS["gpt-nano"]))[:5]
    ['blocks.0.resid_pre', 'blocks.0.resid_mid', 'blocks.0.resid_post', 'blocks.0.mlp.hidden', 'blocks.1.resid_pre']
    """
    points = [p for p in POINTS if p in block_points(config)]
    if config.n_experts:
        points = [p for p in points if p != "mlp.hidden"]
    return {cache_name(layer, point): (layer, point) for layer in range(config.n_layers) for point in points}


def sae_config(layer: int, point: str, d_sae: int, k: int, l1: float, steps: int = SAE_TRAIN_STEPS) -> SaeConfig:
    """The page's autoencoder run: the student's hook point, size and sparsity, :data:`SAE_TRAIN_TOKENS` tokens."""
    return SaeConfig(
        layer=layer, point=point, d_sae=d_sae, k=k, l1=0.0 if k else l1, steps=steps, tokens=SAE_TRAIN_TOKENS
    )


def corpus_chars(model_config, config: SaeConfig) -> int:
    """The corpus characters an autoencoder run reads: about 8 a token for its tokens and its held-out windows.

    >>> from types import SimpleNamespace
    >>> corpus_chars(SimpleNamespace(context_length=128), SaeConfig(tokens=16_384, eval_windows=4))
    143360
    """
    return 8 * (config.tokens + config.eval_windows * model_config.context_length) + 8192


def readable(tokenizer, text: str) -> str:
    """``text`` without the characters a character-level tokenizer never saw (any other tokenizer reads it all).

    >>> readable(CharTokenizer.train("ab "), "a cab!")
    'a ab'
    """
    if not isinstance(tokenizer, CharTokenizer):
        return text
    unknown = set(tokenizer.unknown_characters(text))
    return "".join(ch for ch in text if ch not in unknown) if unknown else text


def build_sae_trainer(model, tokenizer, text: str, config: SaeConfig, name: str):
    """The autoencoder run, built in its lab worker: the corpus tokenized (only what the run reads), the activations
    gathered (:func:`llmviz.interpret.sae.build_trainer`)."""
    ids = tokenizer.encode(text[: corpus_chars(model.config, config)])
    return build_trainer(model, ids, config, model_identity(model, name), tokenizer)


def sae_curves(history) -> list[dict]:
    """One row per step of an autoencoder run (its :class:`llmviz.interpret.sae.SaeMetrics`): variance explained,
    L0, dead features, and the model's loss clean / spliced / zeroed where it was measured."""
    rows = []
    for m in history:
        spliced = m.spliced
        rows.append(
            {
                "step": m.step,
                "variance explained": m.variance_explained,
                "L0": m.l0,
                "dead": m.dead,
                "mse": m.mse,
                "clean loss": spliced.clean if spliced else None,
                "spliced-in loss": spliced.spliced if spliced else None,
                "zeroed loss": spliced.zeroed if spliced else None,
            }
        )
    return rows


def knockout_default(model, sae: SparseAutoencoder, hook: str, ids: list[int]) -> int:
    """The feature the knock-out opens on: the one with the largest total activation over the text ``ids`` (summed
    over its tokens), so that knocking it out changes the loss (a feature silent on the text changes nothing)."""
    from llmviz.interpret.interventions import check_text
    from llmviz.interpret.sae import activations_at

    check_text(model, ids, least=1)
    acts = activations_at(model, torch.tensor([list(ids)], device=next(model.parameters()).device), hook)[0]  # (T, D)
    with torch.no_grad():
        return int(sae.encode(acts.float().cpu()).sum(0).argmax())  # (T, S) → (S,)


def lens_words(layers: list[str], reading: list[str], top: list[list[str]], probs: list[list[float]]) -> str:
    """The logit lens's grid in words: for each position shown (``reading``: its token), the model's own top
    prediction (the last row of ``top`` and ``probs``, rows the layers, columns the positions) and the first
    layer whose top token is already that one.

    >>> said = lens_words(["embed", "block 0", "block 1"], ["a", "b"], [["x", "y"], ["z", "y"], ["z", "y"]],
    ...                   [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    >>> said[-71:]
    'reading "a", "z" 0.5 (from block 0); reading "b", "y" 0.6 (from embed).'

    """
    said = []
    for column, token in enumerate(reading):
        final = top[-1][column]
        first = next(row for row in range(len(layers)) if top[row][column] == final)
        said.append(
            f"reading {words.quoted(token)}, {words.quoted(final)} {words.number(probs[-1][column])} "
            f"(from {layers[first]})"
        )
    return "The model's own top prediction, and the first row that has it: " + "; ".join(said) + "."


def knockout_words(effects: list[list[float]], most: int = 3) -> str:
    """The knock-out grid in words (rows the layers, columns the heads, each cell the loss's change in nats without
    that head; NaN: not measured): the heads whose loss rises most, and how many heads lower the loss when knocked out.

    >>> knockout_words([[0.02, -0.01], [0.5, float("nan")]]).split("; ")
    ['Without one head the loss rises most for layer 1, head 0 (+0.5 nats), layer 0, head 0 (+0.02) and layer 0, \
head 1 (-0.01)', '1 of the 3 heads measured lowers it.']
    """
    cells = [(v, (layer, head)) for layer, row in enumerate(effects) for head, v in enumerate(row) if math.isfinite(v)]
    if not cells:
        return "No head measured yet."
    cells.sort(key=lambda cell: -cell[0])
    named = [
        f"{head_name(pair)} ({value:+.3g}{' nats' if i == 0 else ''})" for i, (value, pair) in enumerate(cells[:most])
    ]
    lower = sum(1 for value, _ in cells if value < 0)
    return (
        f"Without one head the loss rises most for {words.listed(named)}; {lower} of the {len(cells)} heads measured "
        f"{'lowers' if lower == 1 else 'lower'} it."
    )


def patching_words(rows: list[str], columns: list[str], restored: list[list[float]], most: int = 3) -> str:
    """The patching grid in words (rows the layers, columns the positions or heads patched, each cell the share of the
    clean answer's logit difference that patch restores; NaN: none): the ``most`` patches that restore the most, and
    how many restore more than half.

    >>> patching_words(["layer 0", "layer 1"], ["a", "b"], [[0.1, 0.9], [0.6, float("nan")]]).split("; ")
    ['Patched one at a time, the most is restored by layer 0 at "b" (0.9), layer 1 at "a" (0.6) and layer 0 at \
"a" (0.1)', '2 of the 3 patches restore more than half.']
    """
    cells = [(v, r, c) for r, row in enumerate(restored) for c, v in enumerate(row) if math.isfinite(v)]
    if not cells:
        return "No patch restores a share."
    cells.sort(key=lambda cell: -cell[0])
    named = [f"{rows[r]} at {words.quoted(columns[c])} ({words.number(v)})" for v, r, c in cells[:most]]
    half = sum(1 for v, _, _ in cells if v > 0.5)
    return (
        f"Patched one at a time, the most is restored by {words.listed(named)}; {half} of the {len(cells)} patches "
        f"{'restores' if half == 1 else 'restore'} more than half."
    )


def change_words(change: list[float], predicting: list[str], what: str, most: int = 3) -> str:
    """The loss's change on every next token after a knock-out in words (``predicting``: each bar's token as drawn;
    ``what``: what was knocked out): on how many tokens the loss rises, the ``most`` that rise most, the largest fall.

    >>> change_words([0.5, -0.25, 0.0, 2.0], ["a", "b", "c", "d"], "head 1.3")
    'Without head 1.3 the loss rises on 2 of the 4 next tokens, most when predicting "d" (+2 nats) and "a" (+0.5); \
it falls most at "b" (-0.25).'
    """
    cells = [(v, predicting[i]) for i, v in enumerate(change) if math.isfinite(v)]
    rising = sorted((cell for cell in cells if cell[0] > 0), key=lambda cell: -cell[0])
    said = f"Without {what} the loss rises on {len(rising)} of the {len(cells)} next tokens"
    if rising:
        named = [f"{words.quoted(t)} ({v:+.3g}{' nats' if i == 0 else ''})" for i, (v, t) in enumerate(rising[:most])]
        said += f", most when predicting {words.listed(named)}"
    falling = [cell for cell in cells if cell[0] < 0]
    if falling:
        value, token = min(falling, key=lambda cell: cell[0])
        said += f"; it falls most at {words.quoted(token)} ({value:+.3g})"
    return said + "."


def true_next_words(layers: list[str], true: list[list[float]], picked: int, name: str) -> str:
    """The logit lens's p(true next token) chart in words (``true``: rows the layers, columns the positions;
    ``picked``: the position drawn in colour, ``name`` its label): that position's probability at the first and the
    last row and where it peaks, and the mean over every position at the first and the last row.

    >>> true_next_words(["embed", "block 0", "block 1"], [[0.1, 0.0], [0.8, 0.2], [0.6, 0.4]], 0, "a → b")
    'p(the true next token) for "a → b": 0.1 at embed, 0.6 at block 1, highest 0.8 at block 0. The mean over all 2 \
positions goes from 0.05 at embed to 0.5 at block 1.'
    """
    line = [row[picked] for row in true]
    peak = max(range(len(line)), key=lambda i: line[i])
    means = [sum(row) / len(row) for row in true]
    return (
        f"p(the true next token) for {words.quoted(name)}: {words.number(line[0])} at {layers[0]}, "
        f"{words.number(line[-1])} at {layers[-1]}, highest {words.number(line[peak])} at {layers[peak]}. The mean "
        f"over all {len(true[0])} positions goes from {words.number(means[0])} at {layers[0]} to "
        f"{words.number(means[-1])} at {layers[-1]}."
    )


def detector_words(kind: str, values: list[list[float]], chance: float, most: int = 3) -> str:
    """A head detector's grid in words (rows the layers, columns the heads): the ``most`` highest heads, what a head
    spreading its attention evenly scores, and how many heads score more than twice that.

    >>> detector_words("previous token", [[0.9, 0.1], [0.3, 0.05]], 0.1, 2)
    'The previous token score is highest for layer 0 head 0 (0.9) and layer 1 head 0 (0.3); a head attending evenly \
scores about 0.1, and 2 of the 4 heads score more than twice that.'
    """
    best = best_heads(torch.tensor(values, dtype=torch.float64), most)
    named = [f"layer {layer} head {head} ({words.number(score)})" for score, layer, head in best]
    above = sum(1 for row in values for v in row if v > 2 * chance)
    count = sum(len(row) for row in values)
    return (
        f"The {kind} score is highest for {words.listed(named)}; a head attending evenly scores about "
        f"{words.number(chance)}, and {above} of the {count} heads score more than twice that."
    )


def phase_words(
    steps: list[int], name: str, score: list[float], repeated: list[float], first: list[float], knocked: list[float]
) -> str:
    """The induction run's chart in words: how ``name``'s induction ``score`` moved from the first probed step to the
    last, the loss on the repeated half (``repeated``) and on the first half (``first``) at both, and the repeated
    half's loss at the last step with that head knocked out (``knocked``; empty: not measured).

    >>> phase_words([0, 400], "layer 1, head 2", [0.02, 0.6], [4.1, 0.9], [4.2, 3.3], [4.0, 3.1])
    "From step 0 to step 400, the induction score of layer 1, head 2 goes from 0.02 to 0.6; the loss on the repeated \
half from 4.1 to 0.9 nats, on the first half from 4.2 to 3.3. With that head knocked out, the repeated half's loss \
is 3.1 at step 400."
    """
    said = (
        f"From step {steps[0]} to step {steps[-1]}, the induction score of {name} goes from {words.number(score[0])} "
        f"to {words.number(score[-1])}; the loss on the repeated half from {words.number(repeated[0])} to "
        f"{words.number(repeated[-1])} nats, on the first half from {words.number(first[0])} to "
        f"{words.number(first[-1])}."
    )
    if knocked:
        said += (
            f" With that head knocked out, the repeated half's loss is {words.number(knocked[-1])} at step {steps[-1]}."
        )
    return said


def histogram_words(feature: int, centres: list[float], counts: list[float]) -> str:
    """A feature's activation histogram in words: how many tokens it fires on, the commonest activation (its bin's
    centre) and the largest one drawn.

    >>> histogram_words(7, [0.5, 1.5, 2.5], [10, 4, 1])
    'Feature 7 fires on 15 tokens here; most often near 0.5 (10 tokens), at most near 2.5.'
    """
    total = sum(counts)
    if not total:
        return f"Feature {feature} never fires on these tokens."
    common = max(range(len(counts)), key=lambda i: counts[i])
    top = max(i for i, count in enumerate(counts) if count > 0)
    return (
        f"Feature {feature} fires on {words.number(total)} tokens here; most often near "
        f"{words.number(centres[common])} ({words.number(counts[common])} tokens), at most near "
        f"{words.number(centres[top])}."
    )


def sae_curve_words(rows: list[dict]) -> str:
    """An autoencoder run's curves in words (:func:`sae_curves`' rows): at its last step the variance explained, L0
    and dead features, and the model's loss clean, with x̂ spliced in and zeroed where last measured.

    >>> sae_curve_words([{"step": 50, "variance explained": 0.91, "L0": 12.5, "dead": 3,
    ...                   "clean loss": 2.1, "spliced-in loss": 2.4, "zeroed loss": 5.6}])
    'At step 50: variance explained 0.91, L0 12.5 features per token, 3 dead features. Loss at step 50: 2.1 clean, \
2.4 with x̂ spliced in, 5.6 zeroed.'
    """
    last = rows[-1]
    said = (
        f"At step {last['step']}: variance explained {words.number(last['variance explained'])}, L0 "
        f"{words.number(last['L0'])} features per token, {words.number(last['dead'])} dead features."
    )
    measured = [row for row in rows if row.get("spliced-in loss") is not None]
    if measured:
        row = measured[-1]
        said += (
            f" Loss at step {row['step']}: {words.number(row['clean loss'])} clean, "
            f"{words.number(row['spliced-in loss'])} with x̂ spliced in, {words.number(row['zeroed loss'])} zeroed."
        )
    return said
