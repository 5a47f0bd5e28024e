"""From GPT-2 to today's open models: what each architecture switch changes, computed for the pages.

Every function takes a :class:`~llmviz.models.gpt.GPTConfig`, a recorded cache or plain numbers
and returns tensors, small dataclasses or rows for a table; the pages only draw them.

- :func:`architecture`: the forward pass as steps with shapes, for any switches.
- RoPE (:func:`rope_angles`, :func:`rope_scores`): the angle of every pair of dimensions at every
  position, and the proof that a rotated query·key depends only on the distance between them.
- Grouped-query attention (:func:`kv_groups`, :func:`kv_cache_bytes`): which query heads share a
  key/value head, and the memory the KV cache saves.
- RMSNorm vs LayerNorm, SwiGLU vs GELU (:func:`norm_comparison`, :func:`mlp_comparison`) on the
  same residual stream.
- Mixture of experts (:func:`router_choices`): the experts each token went to.
- :func:`gpt2_to_llama`: GPT-2's configuration with one switch flipped at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from llmviz.errors import ConfigError
from llmviz.lessons import words
from llmviz.models.gpt import SWITCHES, GPTConfig, cache_name, count_parameters_without_building
from llmviz.models.layers import apply_rope, gelu_tanh, rope_cos_sin, rope_frequencies, silu
from llmviz.models.presets import PRESETS, PresetName

# ---------------------------------------------------------------------------- the forward pass, by switches

POSITION_TITLES = {
    "learned": "learned position table",
    "sinusoidal": "sinusoidal positions (fixed)",
    "rope": "RoPE (rotary positions)",
    "none": "no positions (NoPE)",
}
NORM_TITLES = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}
MLP_TITLES = {"gelu": "GELU MLP", "swiglu": "SwiGLU MLP"}


@dataclass(frozen=True)
class ArchitectureStep:
    """One step of the forward pass as the Model page draws it: its name, the tensor's shape, and a detail."""

    name: str
    shape: tuple[str, ...]
    detail: str


def attention_kind(config: GPTConfig) -> str:
    """'multi-head', 'grouped-query (G query heads per key/value head)' or 'multi-query'.

    >>> attention_kind(GPTConfig(n_heads=12)), attention_kind(GPTConfig(n_heads=12, n_kv_heads=1))
    ('multi-head', 'multi-query')
    >>> attention_kind(GPTConfig(n_heads=12, n_kv_heads=4))
    'grouped-query (3 query heads per key/value head)'
    """
    if config.kv_heads == config.n_heads:
        return "multi-head"
    if config.kv_heads == 1:
        return "multi-query"
    return f"grouped-query ({config.n_heads // config.kv_heads} query heads per key/value head)"


def architecture(config: GPTConfig, batch: str = "B", tokens: str = "T") -> list[ArchitectureStep]:
    """The forward pass as a list of steps with symbolic and numeric tensor shapes, for any switches."""
    d, v, h, hd, f = config.d_model, config.vocab_size, config.n_heads, config.head_dim, config.mlp_width
    norm = NORM_TITLES[config.norm]
    if config.n_experts:
        mlp = f"{norm} → router → {config.experts_top_k} of {config.n_experts} {MLP_TITLES[config.mlp_kind]}s"
    else:
        mlp = f"{norm} → {MLP_TITLES[config.mlp_kind]}"
    block = f"{norm} → attention → + shortcut" + (f" → {mlp} → + shortcut" if config.mlp else " (attention only)")
    steps = [
        ArchitectureStep("token ids", (batch, tokens), f"integers in [0, {v})"),
        ArchitectureStep("token embedding", (batch, tokens, str(d)), f"rows of a {v:,} × {d} table"),
    ]
    if config.positions == "learned":
        steps.append(
            ArchitectureStep(
                "+ position embedding", (batch, tokens, str(d)), f"rows of a {config.context_length:,} × {d} table"
            )
        )
    elif config.positions == "sinusoidal":
        steps.append(
            ArchitectureStep("+ sinusoidal positions", (batch, tokens, str(d)), "sin/cos waves, no parameters")
        )
    steps.append(ArchitectureStep(f"{config.n_layers} × transformer block", (batch, tokens, str(d)), block))
    steps.append(ArchitectureStep("   ↳ Q per head", (batch, str(h), tokens, str(hd)), f"{h} query heads × {hd} dims"))
    steps.append(
        ArchitectureStep(
            "   ↳ K, V per head",
            (batch, str(config.kv_heads), tokens, str(hd)),
            f"{config.kv_heads} key/value heads: {attention_kind(config)}",
        )
    )
    if config.positions == "rope":
        steps.append(
            ArchitectureStep(
                "   ↳ rotate Q and K",
                (batch, str(h), tokens, str(hd)),
                f"RoPE: {hd // 2} pairs turned by position × θ^(−2i/{hd}), θ = {config.rope_theta:g}",
            )
        )
    steps.append(
        ArchitectureStep(
            "   ↳ attention pattern", (batch, str(h), tokens, tokens), "softmax(QKᵀ/√d_head) with a causal mask"
        )
    )
    if config.mlp and config.n_experts:
        steps.append(
            ArchitectureStep(
                "   ↳ router",
                (batch, tokens, str(config.n_experts)),
                f"softmax over {config.n_experts} experts, keep the top {config.experts_top_k}",
            )
        )
    if config.mlp:
        detail = (
            ("SiLU(x·W_gate) ⊙ (x·W_up)" if config.mlp_kind == "swiglu" else "Linear → GELU")
            + f", {f / d:.3g} × wider"
            + (" (per expert)" if config.n_experts else "")
        )
        steps.append(ArchitectureStep("   ↳ MLP hidden", (batch, tokens, str(f)), detail))
    steps += [
        ArchitectureStep(f"final {norm}", (batch, tokens, str(d)), ""),
        ArchitectureStep(
            "output head → logits",
            (batch, tokens, str(v)),
            "the token embedding, reused (tied)" if config.tie_weights else "a score for every token of the vocabulary",
        ),
    ]
    return steps


# ---------------------------------------------------------------------------- RoPE


@dataclass(frozen=True)
class RopeAngles:
    """``angles[p, i]``: how far (radians) pair i (dimensions i and i + head_dim/2) is turned at position p."""

    frequencies: torch.Tensor  # (hd/2,) radians per position, θ^(−2i/hd)
    wavelengths: torch.Tensor  # (hd/2,) positions for a full turn, 2π / frequency
    angles: torch.Tensor  # (P, hd/2)


def rope_angles(head_dim: int, theta: float = 10000.0, positions: int = 64) -> RopeAngles:
    """RoPE's angles: pair 0 turns 1 radian per position, the last pair almost not at all.

    >>> r = rope_angles(4, theta=100.0, positions=3)
    >>> r.frequencies.tolist(), r.angles[2].tolist()  # θ^0 = 1 and θ^(−1/2) = 0.1 rad per position
    ([1.0, 0.10000000149011612], [2.0, 0.20000000298023224])
    """
    frequencies = rope_frequencies(head_dim, theta)
    angles = torch.arange(positions, dtype=torch.float32)[:, None] * frequencies[None, :]  # (P, hd/2)
    return RopeAngles(frequencies, 2 * math.pi / frequencies, angles)


def rotate(vector: torch.Tensor, position: int, theta: float = 10000.0) -> torch.Tensor:
    """One (hd,) query or key vector rotated to ``position``, as the model rotates it."""
    cos, sin = rope_cos_sin(torch.tensor([position]), vector.shape[-1], theta)
    return apply_rope(vector, cos[0], sin[0])


@dataclass(frozen=True)
class RopeScores:
    """``scores[m, n]`` = rotate(q, m) · rotate(k, n) for one query and one key vector at every pair of positions,
    and the same without rotation (``plain``, equal everywhere)."""

    scores: torch.Tensor  # (P, P)
    by_distance: dict[int, tuple[float, float]]  # m − n → (smallest, largest) score over the pairs at that distance
    plain: float


def rope_scores(head_dim: int = 16, theta: float = 10000.0, positions: int = 24, seed: int = 0) -> RopeScores:
    """Put the same query and key at every pair of positions: with RoPE the score depends on m − n only
    (every diagonal of ``scores`` is constant), because R(m)ᵀR(n) = R(n − m)."""
    generator = torch.Generator().manual_seed(seed)
    q, k = torch.randn(head_dim, generator=generator), torch.randn(head_dim, generator=generator)
    cos, sin = rope_cos_sin(torch.arange(positions), head_dim, theta)  # (P, hd)
    rotated_q, rotated_k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)  # (P, hd) each
    scores = rotated_q @ rotated_k.T  # (P, P)
    by_distance = {}
    for distance in range(positions):
        diagonal = torch.diagonal(scores, offset=-distance)  # query m = n + distance
        by_distance[distance] = (float(diagonal.min()), float(diagonal.max()))
    return RopeScores(scores, by_distance, float(q @ k))


# ---------------------------------------------------------------------------- grouped-query attention

BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}


def kv_groups(config: GPTConfig) -> list[list[int]]:
    """For every key/value head, the query heads that read it.

    >>> kv_groups(GPTConfig(d_model=64, n_heads=8, n_kv_heads=2))
    [[0, 1, 2, 3], [4, 5, 6, 7]]
    """
    group = config.n_heads // config.kv_heads
    return [list(range(j * group, (j + 1) * group)) for j in range(config.kv_heads)]


def kv_cache_bytes(config: GPTConfig, tokens: int = 1, dtype: str = "bf16", batch: int = 1) -> int:
    """Bytes a KV cache holds: 2 (K and V) × layers × key/value heads × head_dim × tokens × batch × bytes per number.

    >>> kv_cache_bytes(GPTConfig(), tokens=1, dtype="fp16")  # GPT-2 small: 2 × 12 × 12 × 64 × 2 bytes
    36864
    """
    return config.kv_cache_values_per_token * tokens * batch * BYTES[dtype]


# ---------------------------------------------------------------------------- norms and MLPs on one residual stream


def norm_comparison(stream: torch.Tensor, eps: float = 1e-5) -> dict[str, torch.Tensor]:
    """LayerNorm and RMSNorm (without their learned scale and shift) of the same (T, C) residual stream.

    Per token: the mean and RMS before; LayerNorm's output has mean 0 and RMS 1, RMSNorm's has RMS 1
    and keeps the sign of the mean. ``difference`` is the largest gap between the two outputs.
    """
    layer = F.layer_norm(stream, (stream.shape[-1],), eps=eps)  # (T, C)
    rms = F.rms_norm(stream, (stream.shape[-1],), eps=eps)  # (T, C)
    return {
        "mean_before": stream.mean(-1),
        "rms_before": stream.pow(2).mean(-1).sqrt(),
        "layernorm": layer,
        "rmsnorm": rms,
        "mean_layernorm": layer.mean(-1),
        "rms_layernorm": layer.pow(2).mean(-1).sqrt(),
        "mean_rmsnorm": rms.mean(-1),
        "rms_rmsnorm": rms.pow(2).mean(-1).sqrt(),
        "difference": (layer - rms).abs().amax(-1),
    }


def activation_curves(low: float = -4.0, high: float = 4.0, points: int = 401) -> dict[str, torch.Tensor]:
    """GELU (GPT-2) and SiLU (SwiGLU's gate) on one axis."""
    x = torch.linspace(low, high, points)
    return {"x": x, "GELU (tanh approximation)": gelu_tanh(x), "SiLU = x·sigmoid(x)": silu(x), "ReLU": F.relu(x)}


def activation_words(curves: dict[str, torch.Tensor]) -> str:
    """The activation curves in words: each one's value at the right end (where all pass x through) and its lowest
    point (where they differ: ReLU cuts at 0, GELU and SiLU dip below it).

    >>> print(activation_words({"x": torch.tensor([-2.0, -1.0, 0.0, 2.0]), "ReLU": torch.tensor([0.0, 0.0, 0.0, 2.0]),
    ...                         "dip": torch.tensor([-0.1, -0.3, 0.0, 1.9])}))
    From x = -2 to 2. At x = 2: "ReLU" 2 and "dip" 1.9. Lowest: "ReLU" 0 from x = -2 to 0; "dip" -0.3 at x = -1.
    """
    x = curves["x"]
    named = {name: values for name, values in curves.items() if name != "x"}
    ends = words.listed([f"{words.quoted(name)} {words.number(float(v[-1]))}" for name, v in named.items()])
    lows = []
    for name, values in named.items():
        at = torch.nonzero(values == values.min()).flatten()  # a flat bottom (ReLU's) is said as its span
        where = f"from x = {words.number(float(x[at[0]]))} to {words.number(float(x[at[-1]]))}"
        where = where if len(at) > 1 else f"at x = {words.number(float(x[at[0]]))}"
        lows.append(f"{words.quoted(name)} {words.number(float(values.min()))} {where}")
    return (
        f"From x = {words.number(float(x[0]))} to {words.number(float(x[-1]))}. "
        f"At x = {words.number(float(x[-1]))}: {ends}. Lowest: {'; '.join(lows)}."
    )


def mlp_parameters(d_model: int, hidden: int, kind: str, bias: bool = False) -> int:
    """Weights of one MLP: GELU has 2 matrices (up, down), SwiGLU 3 (gate, up, down).

    >>> mlp_parameters(768, 3072, "gelu"), mlp_parameters(768, 2048, "swiglu")  # 8/3 · d keeps the count
    (4718592, 4718592)
    """
    matrices = 3 if kind == "swiglu" else 2
    biases = (matrices - 1) * hidden + d_model if bias else 0
    return matrices * d_model * hidden + biases


@torch.no_grad()
def mlp_comparison(stream: torch.Tensor, hidden: int = 64, seed: int = 0) -> dict[str, torch.Tensor]:
    """A GELU MLP and a SwiGLU MLP with the same random W_up, on the same normalised (T, C) stream.

    SwiGLU multiplies W_up's output by a gate, SiLU(x·W_gate), instead of passing it through GELU:
    ``gate`` near 0 closes a neuron for this token, near 1 (or above) opens it.
    """
    generator = torch.Generator().manual_seed(seed)
    width = stream.shape[-1]
    normed = F.rms_norm(stream, (width,))  # (T, C)
    w_up = torch.randn(width, hidden, generator=generator) / math.sqrt(width)  # (C, F)
    w_gate = torch.randn(width, hidden, generator=generator) / math.sqrt(width)  # (C, F)
    up = normed @ w_up  # (T, F)
    gate = silu(normed @ w_gate)  # (T, F)
    return {"up": up, "gelu": gelu_tanh(up), "gate": gate, "swiglu": gate * up}


# ---------------------------------------------------------------------------- mixture of experts


@dataclass(frozen=True)
class RouterChoices:
    """Which experts each token of a text went to in one block, with the router's probabilities."""

    probs: torch.Tensor  # (T, E) the router's softmax
    experts: torch.Tensor  # (T, k) chosen experts, most likely first
    weights: torch.Tensor  # (T, k) their mixing weights (renormalised over the k, rows sum to 1)
    load: torch.Tensor  # (E,) tokens sent to each expert


def router_choices(cache: dict[str, torch.Tensor], layer: int) -> RouterChoices | None:
    """The router's choices in block ``layer`` for batch row 0 of a recorded cache; None for a dense block."""
    if cache_name(layer, "mlp.router_probs") not in cache:
        return None
    probs, experts = cache[cache_name(layer, "mlp.router_probs")][0], cache[cache_name(layer, "mlp.experts")][0]
    load = torch.bincount(experts.reshape(-1), minlength=probs.shape[-1])
    return RouterChoices(probs, experts, cache[cache_name(layer, "mlp.expert_weights")][0], load)


def router_words(labels: list[str], probs: torch.Tensor, top_k: int) -> str:
    """The router's probabilities in words: how many tokens and experts, each token's top choice counted per expert,
    and the surest and the least sure token.

    >>> probs = torch.tensor([[0.7, 0.2, 0.1], [0.4, 0.35, 0.25]])
    >>> print(router_words(["a", "b"], probs, 2))
    2 tokens, 3 experts, each token sent to its top 2. First choices: expert 0 2 tokens.
    Surest: "a" to expert 0 at 0.7; least sure: "b" to expert 0 at 0.4.
    """
    top = probs.max(dim=-1)  # (T,) each token's first choice and its probability
    firsts = torch.bincount(top.indices, minlength=probs.shape[-1])
    counted = words.listed(
        [f"expert {e} {int(n)} token{'s' if int(n) != 1 else ''}" for e, n in enumerate(firsts.tolist()) if n]
    )
    sure, unsure = int(torch.argmax(top.values)), int(torch.argmin(top.values))

    def choice(t: int) -> str:
        return f"{words.quoted(labels[t])} to expert {int(top.indices[t])} at {words.number(float(top.values[t]))}"

    return (
        f"{len(labels)} tokens, {probs.shape[-1]} experts, each token sent to its top {top_k}. "
        f"First choices: {counted}. Surest: {choice(sure)}; least sure: {choice(unsure)}."
    )


def load_words(load: list[int], top_k: int) -> str:
    """Each expert's load in words: the busiest and the idlest, out of every token's ``top_k`` choices.

    >>> load_words([3, 0, 1], 2)
    '4 choices (2 tokens × top 2): expert 0 takes the most, 3; expert 1 the fewest, 0.'
    """
    total = sum(load)
    most, fewest = words.extremes(load)
    return (
        f"{total} choices ({total // max(top_k, 1)} tokens × top {top_k}): expert {most} takes the most, {load[most]}; "
        f"expert {fewest} the fewest, {load[fewest]}."
    )


def llama_lab_words(changes: list[str], losses: list[float]) -> str:
    """The GPT-2 → Llama lab's validation losses in words: the first row's, the last row's, the best and the worst.

    >>> llama_lab_words(["GPT-2", "+ RoPE", "+ RMSNorm"], [2.5, 2.3, 2.4])
    'Validation loss (lower is better): "GPT-2" 2.5, "+ RMSNorm" 2.4 at the last step measured; best "+ RoPE" 2.3, \
worst "GPT-2" 2.5.'
    """
    worst, best = words.extremes(losses)

    def row(i: int) -> str:
        return f"{words.quoted(changes[i])} {words.number(losses[i])}"

    return (
        f"Validation loss (lower is better): {row(0)}, {row(len(losses) - 1)} at the last step measured; "
        f"best {row(best)}, worst {row(worst)}."
    )


# ---------------------------------------------------------------------------- GPT-2 → Llama, one switch at a time


@dataclass(frozen=True)
class ArchitectureRow:
    """One row of GPT-2 → Llama: the switch flipped, the configuration, its parameters and KV cache per token."""

    change: str
    config: GPTConfig
    parameters: int
    kv_cache_bytes_per_token: int  # bf16


def gpt2_to_llama(base: GPTConfig | None = None, kv_heads: int | None = None) -> list[ArchitectureRow]:
    """GPT-2's configuration, then one switch flipped at a time until it is Llama-shaped: each row keeps
    the flips above it. SwiGLU's hidden width is 8/3 · d_model (rounded up to a multiple of 64), as
    Llama sizes it, so its three matrices hold about what GELU's two did."""
    first = "GPT-2 small" if base is None else "GPT-2's choices"
    config = (base or GPTConfig(dropout=0.0)).replace(tie_weights=True, qkv_bias=True)
    kv_heads = kv_heads or max(1, config.n_heads // 3)
    while config.n_heads % kv_heads:
        kv_heads -= 1
    swiglu_width = 64 * math.ceil(8 * config.d_model / 3 / 64)
    if config.positions == "rope" or config.head_dim % 2:
        raise ValueError("start from a GPT-2-style configuration with an even head_dim")
    flips: list[tuple[str, dict[str, Any]]] = [
        (first, {}),
        ("positions: learned table → RoPE", dict(positions="rope")),
        ("norm: LayerNorm → RMSNorm", dict(norm="rmsnorm")),
        (
            f"MLP: GELU (4 × d) → SwiGLU ({swiglu_width / config.d_model:.3g} × d)",
            dict(mlp_kind="swiglu", d_mlp=swiglu_width),
        ),
        ("biases off", dict(bias=False, qkv_bias=False)),
        (f"attention: {config.n_heads} → {kv_heads} key/value heads", dict(n_kv_heads=kv_heads)),
        ("output head untied", dict(tie_weights=False)),
    ]
    rows = []
    for change, switches in flips:
        config = config.replace(**switches)
        rows.append(
            ArchitectureRow(
                change,
                config,
                sum(count_parameters_without_building(config).values()),
                kv_cache_bytes(config, 1, "bf16"),
            )
        )
    return rows


@dataclass(frozen=True)
class LabStep:
    """One row of GPT-2 → Llama as a short lab run: the switch flipped, the architecture switches of the run
    (``TrainConfig.architecture`` over the preset ``model``) and the KV cache per token of that shape."""

    change: str
    model: str
    switches: dict[str, Any]
    kv_cache_bytes_per_token: int  # bf16


def gpt2_to_llama_lab(model: PresetName = "gpt-micro", kv_heads: int = 2) -> list[LabStep]:
    """The steps of :func:`gpt2_to_llama` at the size of the preset ``model``, small enough to train in a minute on
    the student's text: each step's switches for a lab run, so that the runs differ only where the table does.

    >>> [step.change for step in gpt2_to_llama_lab()][:2]
    ["GPT-2's choices", 'positions: learned table → RoPE']
    >>> gpt2_to_llama_lab()[-1].switches["n_kv_heads"], gpt2_to_llama_lab()[0].switches["tie_weights"]
    (2, True)
    """
    rows = gpt2_to_llama(PRESETS[model], kv_heads)
    return [
        LabStep(row.change, model, {name: getattr(row.config, name) for name in SWITCHES}, row.kv_cache_bytes_per_token)
        for row in rows
    ]


# ---------------------------------------------------------------------------- longer than training


@torch.no_grad()
def loss_by_position(model: Any, ids: torch.Tensor, context: int, windows: int = 64) -> torch.Tensor:
    """(context,) the mean cross-entropy of the next token at each position 0 … context − 1 of ``windows`` windows
    of ``context`` tokens spread evenly over ``ids`` (a validation text). Measured at a context longer than the one
    a model was trained at, it shows whether its positions extrapolate: a learned table's rows beyond the training
    context were never trained, RoPE's angles there were never seen either, NoPE has no positions at all.

    >>> from llmviz.models.gpt import GPT
    >>> _ = torch.manual_seed(0)
    >>> loss_by_position(GPT(PRESETS["gpt-nano"]).eval(), torch.arange(100) % 7, context=8).shape
    torch.Size([8])
    """
    limit = model.config.context_length
    if not 2 <= context <= limit:
        raise ConfigError(f"The context must be between 2 and the model's context of {limit} tokens (got {context}).")
    if len(ids) < context + 1:
        raise ConfigError(
            f"The text has {len(ids)} tokens: measuring at a context of {context} needs at least {context + 1}."
        )
    starts = torch.linspace(0, len(ids) - context - 1, min(windows, len(ids) - context)).long().unique()  # (W,)
    offsets = torch.arange(context)  # (T,)
    x, y = ids[starts[:, None] + offsets], ids[starts[:, None] + offsets + 1]  # (W, T) each
    logits, _ = model(x.to(next(model.parameters()).device))  # (W, T, V)
    losses = F.cross_entropy(logits.transpose(1, 2).float().cpu(), y, reduction="none")  # (W, T)
    return losses.mean(0)


@dataclass(frozen=True)
class Extrapolation:
    """Models trained at ``trained_context`` tokens, measured at ``context``: each one's loss at every position,
    and its mean within the training context and beyond it."""

    trained_context: int
    context: int
    by_position: dict[str, torch.Tensor]  # name → (context,)
    within: dict[str, float]
    beyond: dict[str, float]


def extrapolation(
    models: dict[str, Any], ids: torch.Tensor, trained_context: int, context: int, windows: int = 64
) -> Extrapolation:
    """:func:`loss_by_position` of every model on the same windows, split at the context they were trained at."""
    if not 1 <= trained_context < context:
        raise ConfigError(f"Measure at a context longer than the {trained_context} tokens of training (got {context}).")
    curves = {name: loss_by_position(model, ids, context, windows) for name, model in models.items()}
    return Extrapolation(
        trained_context,
        context,
        curves,
        {name: float(curve[:trained_context].mean()) for name, curve in curves.items()},
        {name: float(curve[trained_context:].mean()) for name, curve in curves.items()},
    )


# ---------------------------------------------------------------------------- one switch, raced

# Two runs that differ in one architecture switch (``TrainConfig.architecture``), raced on the Training page;
# tests/unit/lessons/test_architecture_race.py builds and trains both sides of each.
SWITCH_RACES: dict[str, tuple[tuple[str, dict], tuple[str, dict]]] = {
    "positions": (("learned positions", {"positions": "learned"}), ("RoPE", {"positions": "rope"})),
    "norm": (("LayerNorm", {"norm": "layernorm"}), ("RMSNorm", {"norm": "rmsnorm"})),
    "mlp": (("GELU MLP", {"mlp_kind": "gelu"}), ("SwiGLU MLP", {"mlp_kind": "swiglu"})),
    "attention": (("multi-head attention", {}), ("grouped-query attention, 2 key/value heads", {"n_kv_heads": 2})),
    "experts": (("dense MLP", {}), ("mixture of 4 experts, top-2", {"n_experts": 4, "experts_top_k": 2})),
    "sinusoidal": (
        ("learned positions", {"positions": "learned"}),
        ("sinusoidal positions", {"positions": "sinusoidal"}),
    ),
    "no positions": (("learned positions", {"positions": "learned"}), ("no positions", {"positions": "none"})),
    "multi-query": (("multi-head attention", {}), ("multi-query attention, 1 key/value head", {"n_kv_heads": 1})),
    "biases": (("with biases", {}), ("no biases", {"bias": False})),
    "tying": (("untied output head", {}), ("head tied to the embedding table", {"tie_weights": True})),
}
SWITCH_RACE_TITLES = {
    "positions": "positions: learned vs RoPE",
    "norm": "LayerNorm vs RMSNorm",
    "mlp": "GELU vs SwiGLU",
    "attention": "multi-head vs grouped-query attention",
    "experts": "dense MLP vs mixture of experts",
    "sinusoidal": "positions: learned vs sinusoidal",
    "no positions": "positions: learned vs none",
    "multi-query": "multi-head vs multi-query attention",
    "biases": "biases vs no biases",
    "tying": "untied vs tied output head",
}
