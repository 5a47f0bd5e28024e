"""The Tuning page's numbers: a base model, its instruction-tuned (SFT) and preference-tuned (DPO) versions side by
side: their answers to the same prompts, each answer token's probability under each model, the answers' loss on the
held-out questions, the preference accuracy on held-out pairs, and the response mask over an example's tokens.

The page opens on the shipped trio (``data/gpt-python-docs``, ``-sft``, ``-dpo``, trained by
``scripts/train_shipped_models.sh``); a student's own tuned runs take the place of the shipped ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from llmviz.adapt import dpo, instructions, sft
from llmviz.lessons import words
from llmviz.models.gpt import GPT
from llmviz.tokenizers.base import Tokenizer

ROOT = Path(__file__).resolve().parent.parent.parent
SHIPPED = {
    "base": ROOT / "data" / "gpt-python-docs",
    "SFT": ROOT / "data" / "gpt-python-docs-sft",
    "DPO": ROOT / "data" / "gpt-python-docs-dpo",
}
STAGES = tuple(SHIPPED)
MAX_PROMPT_CHARS = 300  # a prompt typed on the page: cut before it is tokenized
TEMPERATURE = 0.8  # the sampled answers' temperature (the greedy ones take the most likely token)


def shipped_models() -> dict[str, tuple[GPT, Tokenizer]]:
    """The shipped base GPT and its tuned pair, each ``(model, tokenizer)``."""
    from llmviz.lessons.adapting import require_gpt
    from llmviz.training.checkpoint import load_checkpoint

    loaded = {}
    for name, path in SHIPPED.items():
        model, tokenizer, _ = load_checkpoint(path)
        loaded[name] = (require_gpt(model), tokenizer)
    return loaded


def bounded_prompt(prompt: str) -> str:
    """A typed prompt cut to :data:`MAX_PROMPT_CHARS` characters, stripped.

    >>> bounded_prompt("  hi  "), len(bounded_prompt("x" * 1000))
    ('hi', 300)
    """
    return prompt[:MAX_PROMPT_CHARS].strip()


def example_prompts(count: int = 8) -> list[str]:
    """Held-out questions (the models never trained on them), first phrasing of each."""
    seen, prompts = set(), []
    for row in instructions.load_set("sft", "validation"):
        if row["response"] not in seen:
            seen.add(row["response"])
            prompts.append(row["prompt"])
    return prompts[:count]


@dataclass(frozen=True)
class ScoredAnswer:
    """One model's answer and, for each of its tokens, the probability every model gives it (same context)."""

    model: str
    text: str
    tokens: list[str]
    ended: bool
    probabilities: dict[str, list[float]]  # model name → p(token | prompt, answer so far), one per token


@torch.no_grad()
def token_probabilities(model: GPT, tokenizer: Tokenizer, prompt: str, answer_ids: list[int]) -> list[float]:
    """p(answer token | template, answer so far) under ``model``, for each of ``answer_ids``."""
    if not answer_ids:
        return []
    encoded = sft.Encoded(
        sft.encode(tokenizer, instructions.prompt_text(prompt)) + answer_ids,
        len(sft.encode(tokenizer, instructions.prompt_text(prompt))),
    )
    context = model.config.context_length
    if len(encoded.ids) > context + 1:  # keep the answer's end: drop the template's start
        cut = len(encoded.ids) - context - 1
        encoded = sft.Encoded(encoded.ids[cut:], max(1, encoded.prompt_tokens - cut))
    inputs, labels = sft.batch_examples([encoded])  # (1, T), (1, T)
    logits, _ = model(inputs.to(next(model.parameters()).device))  # (1, T, V)
    log_probs = sft.token_log_probs(logits.cpu(), labels)[0]  # (T,)
    kept = log_probs[sft.response_mask(labels)[0]].exp()  # (answer tokens,)
    return [float(p) for p in kept][-len(answer_ids) :]


def side_by_side(
    models: dict[str, tuple[GPT, Tokenizer]], prompt: str, sampled: bool, seed: int, max_new_tokens: int = 48
) -> list[ScoredAnswer]:
    """Each model's answer to ``prompt`` (greedy, or sampled at :data:`TEMPERATURE` from one seed), scored by every
    model. The models share one tokenizer (a tuned model keeps its base's)."""
    prompt = bounded_prompt(prompt)
    temperature = TEMPERATURE if sampled else 0.0
    scored = []
    for name, (model, tokenizer) in models.items():
        said = sft.answer(model, tokenizer, prompt, max_new_tokens, temperature, seed)
        probabilities = {
            other: token_probabilities(other_model, tokenizer, prompt, said.ids)
            for other, (other_model, _) in models.items()
        }
        tokens = [tokenizer.decode([i]) for i in said.ids]
        scored.append(ScoredAnswer(name, said.text, tokens, said.ended, probabilities))
    return scored


@dataclass(frozen=True)
class ModelFigures:
    """What was measured of one model on the held-out sets."""

    model: str
    answer_loss: float  # mean cross-entropy over the held-out answers' tokens
    preference_accuracy: float  # share of held-out pairs where log π(chosen) > log π(rejected)
    ends_answers: float  # share of held-out questions whose greedy answer ends with the end token
    reward_accuracy: float | None  # DPO's: share of pairs with log π/π_SFT (chosen) > (rejected); None for base, SFT


@torch.no_grad()
def models_key(models: dict[str, tuple[GPT, Tokenizer]]) -> tuple:
    """What the page's caches of the three models' answers and figures are keyed on: each model's name, object and
    the sum of its weights (a run's newer snapshot is another key even where an object were reused).

    >>> import torch
    >>> model = torch.nn.Linear(2, 1, bias=False)
    >>> _ = model.weight.data.fill_(0.5)
    >>> models_key({"base": (model, None)})[0][2]
    1.0
    """
    return tuple(
        (name, id(model), sum(float(p.detach().sum()) for p in model.parameters()))
        for name, (model, _) in models.items()
    )


def figures(models: dict[str, tuple[GPT, Tokenizer]], answers_checked: int = 12) -> list[ModelFigures]:
    """The held-out figures of each model (the table the page and docs/tuning.md show); the DPO model's reward
    accuracy is measured against the SFT model of ``models``, its reference."""
    rows = []
    sft_rows, pair_rows = instructions.load_set("sft", "validation"), instructions.load_set("dpo", "validation")
    reference = models["SFT"][0].eval()
    for name, (model, tokenizer) in models.items():
        context = model.config.context_length
        loss = sft.answer_loss(model, sft.encode_rows(tokenizer, sft_rows, context))
        inputs, labels = dpo.pair_batch(dpo.encode_pairs(tokenizer, pair_rows, context))  # (2B, T)
        chosen, rejected = sft.response_log_probs(model.eval(), inputs, labels).chunk(2)  # (B,), (B,)
        reward = None
        if name == "DPO":
            reference_chosen, reference_rejected = sft.response_log_probs(reference, inputs, labels).chunk(2)
            reward = float(((chosen - reference_chosen) > (rejected - reference_rejected)).float().mean())
        ended = [sft.answer(model, tokenizer, p, 48).ended for p in example_prompts(answers_checked)]
        rows.append(
            ModelFigures(name, loss, float((chosen > rejected).float().mean()), sum(ended) / max(len(ended), 1), reward)
        )
    return rows


@dataclass(frozen=True)
class MaskedToken:
    """A token of an example and whether the loss counts it (an answer token) or not (the prompt's)."""

    text: str
    token_id: int
    in_loss: bool


def mask_view(tokenizer: Tokenizer, prompt: str, response: str, context: int = 128) -> list[MaskedToken]:
    """The example's tokens, each marked as in the loss or not: the tokens of the template and the question are
    context only (label -100); the answer's tokens and the end token are predicted and counted."""
    encoded = sft.encode_example(tokenizer, bounded_prompt(prompt), response[: instructions.MAX_FIELD_CHARS], context)
    return [
        MaskedToken(tokenizer.decode([token]), token, index >= encoded.prompt_tokens)
        for index, token in enumerate(encoded.ids)
    ]


DPO_SERIES = ("chosen_ratio", "rejected_ratio", "margin", "accuracy", "val_accuracy")  # what its chart draws


def dpo_curves(metrics: list) -> dict[str, list[tuple[int, float]]]:
    """The DPO chart's series from a run's metrics: the batch's chosen and rejected log-probability ratios, the
    reward margin and the preference accuracy, and the held-out accuracy where it was measured.

    >>> dpo_curves([{"step": 1, "chosen_ratio": 0.5, "rejected_ratio": -0.5, "margin": 0.1, "accuracy": 1.0,
    ... "val_accuracy": None}])["margin"]
    [(1, 0.1)]
    """
    rows = [m if isinstance(m, dict) else vars(m) for m in metrics]  # a checkpoint's dicts or a job's metrics
    return {
        name: [(int(m["step"]), float(m[name])) for m in rows if isinstance(m.get(name), int | float)]
        for name in DPO_SERIES
    }


def kept_dpo_curves(series: dict) -> dict[str, list[tuple[int, float]]]:
    """The DPO chart's series from what the lab keeps of a run (:attr:`llmviz.lab.views.Curve.series`).

    >>> kept_dpo_curves({"margin": ((1, 0.1), (2, 0.3)), "lr": ((1, 1e-4),)})["margin"]
    [(1, 0.1), (2, 0.3)]
    """
    return {name: [(int(step), float(value)) for step, value in series.get(name, ())] for name in DPO_SERIES}


def checkpoint_metrics(path: str | Path) -> list[dict]:
    """The metrics a tuned checkpoint folder recorded (its checkpoint.json's ``metrics``)."""
    import json

    from llmviz.training.checkpoint import META_FILE

    meta = json.loads((Path(path) / META_FILE).read_text(encoding="utf-8"))
    return [m for m in meta.get("metrics", []) if isinstance(m, dict)]


TEMPLATE_EXAMPLE = instructions.render("What is the `pass` statement?", '"pass" is a null operation.')


def tokens_page_link() -> str:
    """A link that opens the Tokens page on the prompt template, special tokens read as special tokens."""
    from urllib.parse import quote

    return f"/tokens?text={quote(TEMPLATE_EXAMPLE)}&tokens_tab=Encode+and+decode&allow_special=true"


def scored_words(answering: str, tokens: list[str], probabilities: dict[str, list[float]]) -> str:
    """One answer's tokens scored by every model, in words: each model's mean probability over the answer's tokens,
    and the token the ``answering`` model gives its lowest probability.

    >>> scored_words("SFT", ["Hi", "!"], {"base": [0.25, 0.05], "SFT": [0.75, 0.25]})
    'The SFT model\\'s answer, 2 tokens: mean probability base 0.15, SFT 0.5; the SFT model\\'s least likely token is \
"!" (0.25).'
    """
    if not tokens:
        return f"The {answering} model's answer is empty."
    means = ", ".join(f"{name} {words.number(sum(ps) / len(ps))}" for name, ps in probabilities.items() if ps)
    own = probabilities.get(answering, [])
    said = f"The {answering} model's answer, {len(tokens)} tokens: mean probability {means}"
    if own:
        low = min(range(len(own)), key=lambda i: own[i])
        said += (
            f"; the {answering} model's least likely token is {words.quoted(tokens[low])} ({words.number(own[low])})"
        )
    return said + "."
