"""The Training page's lesson "The loss by hand", whole: the shipped GPT reads two short lines, its cross-entropy is
taken apart position by position, and the gradient is followed back through the output layer
(llmviz.training.losses computes every number)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

from llmviz.lessons.training import DEFAULT_BATCH_TEXT, backprop_words
from llmviz.training.losses import batch_loss, position_gradient
from ui import boxes, charts, picker, share
from ui.text import tidy_floats
from ui.widgets import index_slider


def batch_table(tokenizer, inputs: torch.Tensor, targets: torch.Tensor, parts) -> None:
    """Every position of a batch: its input, its target, and the target's probability and log-probability."""
    table = []
    for b in range(inputs.shape[0]):
        for t in range(inputs.shape[1]):
            table.append(
                {
                    "sequence": b,
                    "position": t,
                    "input": tokenizer.printable(int(inputs[b, t])),
                    "target": tokenizer.printable(int(targets[b, t])),
                    "p(target)": float(parts.target_probabilities[b, t]),
                    "log p(target)": float(parts.log_probabilities[b, t]),
                }
            )
    st.dataframe(
        tidy_floats(pd.DataFrame(table)).style.format({"p(target)": "{:.6f}", "log p(target)": "{:.4f}"}),
        hide_index=True,
        width="stretch",
    )


def loss_formula(parts, vocab_size: int) -> None:
    """The loss written out from the batch's log-probabilities, beside F.cross_entropy, perplexity and ln V."""
    logs = parts.log_probabilities.flatten().tolist()
    n = len(logs)
    terms = " + ".join(f"({v:.3f})" for v in logs[:6]) + (" + \\dots" if n > 6 else "")
    charts.latex(
        rf"\text{{loss}} = -\frac{{1}}{{{n}}}\Big[{terms}\Big] = "
        rf"-({parts.mean_log_probability:.4f}) = {parts.loss:.4f}"
    )
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("− mean log p", f"{parts.loss:.4f}")
    m2.metric("F.cross_entropy", f"{parts.cross_entropy:.4f}")
    m3.metric("perplexity e^loss", f"{parts.perplexity:,.2f}")
    m4.metric(f"uniform guess ln {vocab_size}", f"{parts.uniform_loss:.4f}")
    gap = abs(parts.loss - parts.cross_entropy)
    st.caption(
        f"− mean log p and F.cross_entropy differ by {gap:.1e}: PyTorch's cross-entropy is this recipe "
        "(softmax, pick the target's probability, log, mean, negate), with the log taken as log-softmax "
        "(z_target − log Σ e^z) so that a tiny probability never becomes log 0. Perplexity reads as 'as "
        "unsure as a fair choice among this many tokens'."
    )
    if parts.naive_loss != parts.loss and not abs(parts.naive_loss - parts.loss) < 1e-9:
        st.info(
            f"Taking the log of the softmax directly gives {parts.naive_loss:.4f} here: a probability "
            "rounded to 0 has log −∞. Log-softmax avoids that."
        )


def backprop(tokenizer, grad, target: int) -> None:
    """Backpropagation through the output layer at one position: p, the one-hot y and p − y for the target and the
    eight likeliest other tokens, and by hand vs autograd."""
    top = torch.topk(grad.probabilities, 9).indices.tolist()
    shown = [target] + [i for i in top if i != target][:8]
    labels = charts.unique_labels([tokenizer.printable(i) + (" (target)" if i == target else "") for i in shown])
    figure = go.Figure()
    figure.add_trace(go.Bar(x=labels, y=[float(grad.probabilities[i]) for i in shown], name="p (softmax)"))
    figure.add_trace(go.Bar(x=labels, y=[float(grad.one_hot[i]) for i in shown], name="y (one-hot target)"))
    figure.add_trace(go.Bar(x=labels, y=[float(grad.dlogits_by_hand[i]) for i in shown], name="∂L/∂logit = p − y"))
    figure.update_layout(barmode="group", height=360, margin=charts.margins(10))
    charts.show(
        figure,
        width="stretch",
        words=backprop_words(labels, [float(grad.probabilities[i]) for i in shown]),
    )
    p_t = float(grad.probabilities[target])
    charts.latex(
        rf"\frac{{\partial L}}{{\partial z_{{\text{{target}}}}}} = p_{{\text{{target}}}} - 1 = "
        rf"{p_t:.4f} - 1 = {p_t - 1:.4f}"
        rf"\qquad \frac{{\partial L}}{{\partial W}} = (p - y)\,h^\top"
    )
    st.success(
        f"By hand vs autograd: the largest difference over all {grad.entries_compared:,} entries of "
        f"∂L/∂W ({grad.dweight_by_hand.numel():,}) and ∂L/∂z ({grad.dlogits_by_hand.numel():,}) is "
        f"{grad.max_difference:.2e}."
    )
    st.caption(
        "The gradient pushes the target's logit up (p − 1 < 0) and every other logit down in proportion "
        "to how much probability it took. A gradient-descent step W ← W − lr · ∂L/∂W does both at once."
    )


@st.cache_data(show_spinner=False, max_entries=64)
def shipped_batch_loss(rows: tuple[tuple[int, ...], ...]):
    """The shipped GPT's loss on ``rows``, taken apart (llmviz.training.losses): the same for every session, cached."""
    model = picker.shipped_default().model
    return batch_loss(model, [list(ids) for ids in rows])


@st.cache_data(show_spinner=False, max_entries=256)
def shipped_position_gradient(rows: tuple[tuple[int, ...], ...], position: int):
    model = picker.shipped_default().model
    return position_gradient(model, shipped_batch_loss(rows), position)


def loss_step_by_step() -> None:
    """The loss taken apart on a real batch, and backpropagation through the output layer."""
    st.subheader("The loss, step by step, on a real batch")
    gpt_tokenizer = picker.shipped_default().tokenizer
    st.caption(
        "The shipped GPT (trained on the Python reference manual) reads two short sequences; each position "
        "must predict the token after it — the targets are the inputs shifted by one."
    )
    batch_text = boxes.text_area(
        "Two lines of text (one sequence each)",
        DEFAULT_BATCH_TEXT,
        2000,
        "Your two lines",
        height=80,
        **share.bind("by_hand"),
    )
    tokens_per_row = st.slider("Positions per sequence", 1, 8, 3, persist_state="page", **share.bind("positions"))
    rows = [line for line in batch_text.splitlines() if line.strip()][:2]
    encoded = [gpt_tokenizer.encode(line)[: tokens_per_row + 1] for line in rows]
    if len(rows) < 1 or any(len(ids) < tokens_per_row + 1 for ids in encoded):
        st.warning(f"Each line needs at least {tokens_per_row + 1} tokens (inputs plus the next token as target).")
    else:
        batch = shipped_batch_loss(tuple(tuple(ids) for ids in encoded))
        inputs, targets, parts = batch.inputs, batch.targets, batch.parts
        batch_table(gpt_tokenizer, inputs, targets, parts)
        loss_formula(parts, gpt_tokenizer.vocab_size)

        # ------------------------------------------------------------------ backprop by hand
        st.subheader("Backpropagation through the output layer")
        position = index_slider("Position (in sequence 0)", inputs.shape[1], **share.bind("loss_position"))
        target = int(targets[0, position])
        grad = shipped_position_gradient(tuple(tuple(ids) for ids in encoded), position)
        backprop(gpt_tokenizer, grad, target)
