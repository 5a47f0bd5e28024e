"""Scaled dot-product attention, one named stage at a time.

:func:`attention_steps` is the explicit path every llmviz model runs when its
intermediates are recorded (the fast path is ``F.scaled_dot_product_attention``; the
tests check that both agree). Weights follow the textbook convention ``Q = X W_Q``:
``w_q`` has shape ``(d_in, d_out)``. An ``nn.Linear`` stores the transpose.

Worked example (one head, no scaling): two tokens, identity weights.

>>> import torch
>>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
>>> eye = torch.eye(2)
>>> steps = attention_steps(x, eye, eye, eye, scale=False)
>>> steps["scores"][0]          # Q Kᵀ: each token matches itself
tensor([[1., 0.],
        [0., 1.]])
>>> steps["weights"][0].round(decimals=4)   # softmax of [1, 0] = [e/(e+1), 1/(e+1)]
tensor([[0.7311, 0.2689],
        [0.2689, 0.7311]])
"""

from __future__ import annotations

import math
from typing import Literal

import torch

from llmviz.errors import ConfigError

MaskKind = Literal["none", "causal"]  # a mask named by its kind (build_mask)

# the order in which the stages happen; attention_steps returns them in this order
STAGES = [
    "X",
    "KV_source",
    "W_Q",
    "W_K",
    "W_V",
    "Q",
    "K",
    "V",
    "Q_heads",
    "K_heads",
    "V_heads",
    "scores",
    "scaled_scores",
    "mask",
    "masked_scores",
    "weights",
    "head_outputs",
    "concat",
    "W_O",
    "output",
]


def causal_mask(num_queries: int, num_keys: int | None = None, device=None) -> torch.Tensor:
    """Allowed positions (True) for causal attention: query i sees keys 0..i.

    >>> causal_mask(3).int()
    tensor([[1, 0, 0],
            [1, 1, 0],
            [1, 1, 1]], dtype=torch.int32)
    """
    num_keys = num_queries if num_keys is None else num_keys
    # with a cache of past keys, query i sits at absolute position num_keys - num_queries + i
    offset = num_keys - num_queries
    return torch.ones(num_queries, num_keys, dtype=torch.bool, device=device).tril(diagonal=offset)


MASK_KINDS = ("none", "causal")


def build_mask(
    mask: MaskKind, batch: int, num_queries: int, num_keys: int, *, padding_mask=None, allowed=None, device=None
) -> torch.Tensor | None:
    """The allowed-positions mask, broadcastable to ``(batch, heads, T_q, T_k)``; None = all allowed.

    Every kind of mask is named, never guessed from its shape:

    - ``mask`` is ``"none"`` or ``"causal"`` (query i sees keys up to its own position);
    - ``padding_mask`` has shape ``(batch, T_k)``: True or 1 = a real token, False or 0 =
      padding, as Hugging Face's ``attention_mask``; nobody attends to padding;
    - ``allowed`` is a boolean ``(T_q, T_k)``, ``(batch, T_q, T_k)`` or
      ``(batch, heads, T_q, T_k)`` matrix of allowed positions.

    Given together, a position must be allowed by all of them.

    >>> build_mask("causal", 3, 3, 3)[0, 0].int()  # batch 3 = T_q: still causal
    tensor([[1, 0, 0],
            [1, 1, 0],
            [1, 1, 1]], dtype=torch.int32)
    >>> build_mask("none", 3, 3, 3, padding_mask=torch.tensor([[1, 1, 0]] * 3))[0, 0].int()
    tensor([[1, 1, 0]], dtype=torch.int32)
    """
    if not isinstance(mask, str):
        raise ConfigError(
            "The mask must be 'none' or 'causal'; give a mask tensor by its kind: padding_mask= for a (batch, keys) "
            "padding mask, allowed= for a (queries, keys) matrix of allowed positions."
        )
    if mask not in MASK_KINDS:
        raise ConfigError(f"Unknown mask {mask!r}: use 'none' or 'causal' (and padding_mask= or allowed= for tensors).")
    parts = []
    if mask == "causal":
        parts.append(causal_mask(num_queries, num_keys, device=device)[None, None])  # (1, 1, T_q, T_k)
    if padding_mask is not None:
        parts.append(_padding_part(padding_mask, batch, num_keys, device))
    if allowed is not None:
        parts.append(_allowed_part(allowed, batch, num_queries, num_keys, device))
    if not parts:
        return None
    combined = parts[0]
    for part in parts[1:]:
        combined = combined & part
    return combined


def _padding_part(padding_mask, batch: int, num_keys: int, device) -> torch.Tensor:
    """A ``(batch, T_k)`` padding mask (one row alone: batch 1) as ``(B, 1, 1, T_k)`` booleans, its shape checked."""
    padding = torch.as_tensor(padding_mask, device=device).bool()
    if padding.dim() == 1:
        padding = padding[None]
    if padding.shape != (batch, num_keys):
        raise ConfigError(
            f"A padding mask has shape (batch, keys) = ({batch}, {num_keys}); got {tuple(padding.shape)}."
        )
    return padding[:, None, None, :]


def _allowed_part(allowed, batch: int, num_queries: int, num_keys: int, device) -> torch.Tensor:
    """An allowed-positions matrix, ``(T_q, T_k)``, ``(B, T_q, T_k)`` or ``(B, heads, T_q, T_k)``, as 4 dimensions
    of booleans, its shape checked."""
    matrix = torch.as_tensor(allowed, device=device).bool()
    expected = {2: (num_queries, num_keys), 3: (batch, num_queries, num_keys), 4: None}
    if matrix.dim() not in expected or (expected[matrix.dim()] and matrix.shape != expected[matrix.dim()]):
        raise ConfigError(
            f"An allowed-positions matrix of shape {tuple(matrix.shape)} does not fit {batch} sequence(s) of "
            f"{num_queries} queries and {num_keys} keys: give (queries, keys) or (batch, queries, keys)."
        )
    return matrix if matrix.dim() == 4 else matrix[None, None] if matrix.dim() == 2 else matrix[:, None]


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, T, d_out) → (B, T, heads, head_dim) → (B, heads, T, head_dim)."""
    batch, tokens, width = x.shape
    return x.view(batch, tokens, num_heads, width // num_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, heads, T, head_dim) → (B, T, heads, head_dim) → (B, T, heads·head_dim)."""
    batch, heads, tokens, head_dim = x.shape
    return x.transpose(1, 2).contiguous().view(batch, tokens, heads * head_dim)


def masked_softmax(scores: torch.Tensor, allowed: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax over the last axis after setting disallowed scores to -inf.

    Masked entries come out exactly 0; a row with no allowed key at all gives zeros
    (not NaN, which a plain softmax over all -inf would give).
    """
    if allowed is None:
        return scores, torch.softmax(scores, dim=-1)
    masked_scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(masked_scores, dim=-1)
    fully_masked = ~allowed.any(dim=-1, keepdim=True)
    # no `if fully_masked.any()`: reading a GPU tensor's value waits for the GPU, in every layer of every step
    return masked_scores, weights.masked_fill(fully_masked, 0.0)


def _batched(x: torch.Tensor, kv: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` with a batch axis, and the sequence keys and values come from (``kv``, else ``x``) with the same batch:
    an unbatched ``x`` is a batch of one, and an unbatched ``kv`` serves every sequence of a batched ``x``.

    >>> [tuple(t.shape) for t in _batched(torch.zeros(3, 4), torch.zeros(5, 2))]
    [(1, 3, 4), (1, 5, 2)]
    >>> [tuple(t.shape) for t in _batched(torch.zeros(2, 3, 4), torch.zeros(5, 2))]
    [(2, 3, 4), (2, 5, 2)]
    """
    if x.dim() == 2:
        x, kv = x[None], None if kv is None else kv[None]
    source = x if kv is None else kv
    return x, source[None].expand(x.shape[0], -1, -1) if source.dim() == 2 else source


def attention_steps(
    x: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
    num_heads: int = 1,
    mask: MaskKind = "none",
    w_o: torch.Tensor | None = None,
    kv: torch.Tensor | None = None,
    *,
    b_q: torch.Tensor | None = None,
    b_k: torch.Tensor | None = None,
    b_v: torch.Tensor | None = None,
    b_o: torch.Tensor | None = None,
    scale: bool = True,
    dropout: torch.nn.Module | None = None,
    padding_mask: torch.Tensor | None = None,
    allowed: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Every stage of (multi-head) scaled dot-product attention, by name.

    Shapes: ``x`` is ``(T, d_in)`` or ``(B, T, d_in)``; ``kv`` (keys and values from another
    sequence, for cross-attention) is ``(T_k, d_kv)`` or ``(B, T_k, d_kv)``; ``w_q`` is
    ``(d_in, d_out)``, ``w_k`` and ``w_v`` ``(d_kv, d_out)``, ``w_o`` ``(d_out, d_model)``.
    With a batch, Q, K, V are ``(B, T, d_out)``, per-head tensors ``(B, heads, T, head_dim)``,
    scores and weights ``(B, heads, T_q, T_k)``; an unbatched ``x`` gives the same without ``B``.
    Masks are named by kind (:func:`build_mask`): ``mask="causal"``, ``padding_mask=`` (batch,
    keys), ``allowed=`` (queries, keys).
    """
    squeeze = x.dim() == 2
    x, source = _batched(x, kv)
    _check_weights(x, source, w_q, w_k, w_v, num_heads)
    batch, num_queries, _ = x.shape
    num_keys = source.shape[1]

    queries = _project(x, w_q, b_q)  # (B, T_q, d_out)
    keys = _project(source, w_k, b_k)  # (B, T_k, d_out)
    values = _project(source, w_v, b_v)  # (B, T_k, d_v)
    q_heads = split_heads(queries, num_heads)  # (B, H, T_q, head_dim)
    k_heads = split_heads(keys, num_heads)  # (B, H, T_k, head_dim)
    v_heads = split_heads(values, num_heads)  # (B, H, T_k, head_dim_v)
    head_dim = q_heads.shape[-1]

    scores = q_heads @ k_heads.transpose(-2, -1)  # (B, H, T_q, T_k)
    scaled_scores = scores / math.sqrt(head_dim) if scale else scores
    allowed = build_mask(
        mask, batch, num_queries, num_keys, padding_mask=padding_mask, allowed=allowed, device=x.device
    )
    masked_scores, weights = masked_softmax(scaled_scores, allowed)  # (B, H, T_q, T_k)
    if dropout is not None:
        weights = dropout(weights)
    head_outputs = weights @ v_heads  # (B, H, T_q, head_dim_v)
    concat = merge_heads(head_outputs)  # (B, T_q, H * head_dim_v)
    output = concat if w_o is None else _project(concat, w_o, b_o)  # (B, T_q, d_model)
    if w_o is None and b_o is not None:
        output = output + b_o

    full_mask = (
        torch.ones(batch, 1, num_queries, num_keys, dtype=torch.bool, device=x.device)
        if allowed is None
        else allowed.expand(batch, -1, num_queries, num_keys)
    )
    steps = {
        "X": x,
        "KV_source": source,
        "W_Q": w_q,
        "W_K": w_k,
        "W_V": w_v,
        "Q": queries,
        "K": keys,
        "V": values,
        "Q_heads": q_heads,
        "K_heads": k_heads,
        "V_heads": v_heads,
        "scores": scores,
        "scaled_scores": scaled_scores,
        "mask": full_mask,
        "masked_scores": masked_scores,
        "weights": weights,
        "head_outputs": head_outputs,
        "concat": concat,
        "W_O": w_o if w_o is not None else torch.eye(concat.shape[-1]),
        "output": output,
    }
    return {name: value if name.startswith("W_") else value[0] for name, value in steps.items()} if squeeze else steps


def _check_weights(
    x: torch.Tensor, source: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, num_heads: int
) -> None:
    """Refuse weights that do not fit ``x`` (queries) and ``source`` (keys and values), or a head count that does
    not split their width, with what to change.

    >>> x, w = torch.ones(1, 3, 4), torch.ones(4, 6)
    >>> _check_weights(x, x, w, w, w, num_heads=4)
    Traceback (most recent call last):
    ...
    llmviz.errors.ConfigError: 4 heads cannot split a width of 6: the width must be a multiple of the head count.
    """
    d_out = w_q.shape[1]
    if w_q.shape[0] != x.shape[-1] or w_k.shape[0] != source.shape[-1] or w_v.shape[0] != source.shape[-1]:
        raise ConfigError(
            f"W_Q must have {x.shape[-1]} rows (the width of X) and W_K, W_V {source.shape[-1]} rows; "
            f"got {tuple(w_q.shape)}, {tuple(w_k.shape)}, {tuple(w_v.shape)}."
        )
    if w_k.shape[1] != d_out:
        raise ConfigError(f"W_Q and W_K must have the same number of columns; got {d_out} and {w_k.shape[1]}.")
    if num_heads < 1 or d_out % num_heads or w_v.shape[1] % num_heads:
        raise ConfigError(
            f"{num_heads} heads cannot split a width of {d_out}: the width must be a multiple of the head count."
        )


def _project(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x @ weight`` (+ ``bias``): one of attention's linear maps, written as the lesson writes it."""
    y = x @ weight  # (..., d_in) @ (d_in, d_out) -> (..., d_out)
    return y if bias is None else y + bias


def simple_self_attention(x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Self-attention with no trainable weights (as in Raschka, *Build a Large Language Model (From
    Scratch)*, ch. 3): scores are the dot
    products of the embeddings themselves, weights their row-wise softmax, and each context
    vector the weighted sum of all embeddings. The same code as the full version with
    W_Q = W_K = W_V = I and no scaling.

    >>> x = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    >>> simple_self_attention(x)["scores"]
    tensor([[1., 1.],
            [1., 2.]])
    """
    eye = torch.eye(x.shape[-1], dtype=x.dtype)
    steps = attention_steps(x, eye, eye, eye, scale=False)
    scores = steps["scores"][0]
    return {
        "scores": scores,
        "softmax_denominators": scores.exp().sum(-1),
        "weights": steps["weights"][0],
        "context": steps["output"],
    }


# the seed-002 toy example: "The cat sat", d_model = 4 (embeddings + positional offsets)
TOY_TOKENS = ["The", "cat", "sat"]
TOY_EMBEDDINGS = [[0.1, 0.3, 0.5, 0.7], [0.2, 0.4, 0.4, 0.6], [0.15, 0.25, 0.5, 0.1]]
TOY_POSITIONS = [[0.0, 0.1, 0.0, 0.0], [0.0, 0.0, 0.1, 0.0], [0.0, 0.0, 0.0, 0.1]]
TOY_W_Q = [[0.5, 0.1, 0.0, 0.3], [0.4, 0.2, 0.1, 0.0], [0.3, 0.3, 0.3, 0.3], [0.2, 0.1, 0.5, 0.4]]
TOY_W_K = [[0.1, 0.4, 0.0, 0.0], [0.0, 0.5, 0.2, 0.1], [0.3, 0.0, 0.3, 0.3], [0.2, 0.2, 0.1, 0.0]]
TOY_W_V = [[0.2, 0.1, 0.0, 0.0], [0.0, 0.3, 0.5, 0.0], [0.1, 0.1, 0.1, 0.4], [0.0, 0.2, 0.1, 0.1]]
TOY_W_O = [[0.1, 0.0, 0.2, 0.1], [0.0, 0.1, 0.0, 0.2], [0.3, 0.1, 0.0, 0.0], [0.0, 0.2, 0.1, 0.1]]


def toy_input() -> torch.Tensor:
    """The toy example's X: each token's embedding plus its small positional offset, (3, 4)."""
    return torch.tensor(TOY_EMBEDDINGS) + torch.tensor(TOY_POSITIONS)


def toy_matrices(tables: dict[str, object], width: int = 4) -> dict[str, torch.Tensor]:
    """The toy example's matrices as a student edited them: every table ``width`` columns of numbers.

    ``tables`` maps a name (X, W_Q, ...) to anything ``torch.as_tensor`` can read (a list of rows, a NumPy
    array); an empty cell (None, NaN), an infinity or a text is a :class:`ConfigError` that names the matrix.

    >>> toy_matrices({"W_Q": [[1, 2], [3, 4]]}, width=2)["W_Q"]
    tensor([[1., 2.],
            [3., 4.]])
    >>> toy_matrices({"X": [[1.0, float("nan")]]}, width=2)
    Traceback (most recent call last):
    ...
    llmviz.errors.ConfigError: X has an empty cell or a value that is not a number: every entry must be a number.
    """
    matrices = {}
    for name, table in tables.items():
        problem = ConfigError(
            f"{name} has an empty cell or a value that is not a number: every entry must be a number."
        )
        try:
            matrix = torch.as_tensor(
                [[float("nan") if value is None else float(value) for value in row] for row in _rows(table)],
                dtype=torch.float32,
            )
        except (TypeError, ValueError):
            raise problem from None
        if matrix.dim() != 2 or matrix.shape[1] != width or not torch.isfinite(matrix).all():
            raise problem
        matrices[name] = matrix
    return matrices


def _rows(table) -> list:
    return table.tolist() if hasattr(table, "tolist") else list(table)


# the running example of Raschka, *Build a Large Language Model (From Scratch)*, ch. 3: "Your journey starts with one
# step"
JOURNEY_TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
JOURNEY_EMBEDDINGS = [
    [0.43, 0.15, 0.89],
    [0.55, 0.87, 0.66],
    [0.57, 0.85, 0.64],
    [0.22, 0.58, 0.33],
    [0.77, 0.25, 0.10],
    [0.05, 0.80, 0.55],
]


def head_split_steps(x: torch.Tensor, num_heads: int) -> dict[str, torch.Tensor]:
    """The reshapes of multi-head attention on a real tensor, one by one.

    (B, T, d_out) → view → (B, T, heads, head_dim) → transpose(1, 2) → (B, heads, T, head_dim),
    and back with :func:`merge_heads`.
    """
    batch, tokens, width = x.shape
    if width % num_heads:
        raise ConfigError(f"{num_heads} heads cannot split a width of {width}.")
    viewed = x.view(batch, tokens, num_heads, width // num_heads)  # (B, T, H, hd)
    transposed = viewed.transpose(1, 2)  # (B, H, T, hd)
    return {"input": x, "viewed": viewed, "transposed": transposed, "merged": merge_heads(transposed)}
