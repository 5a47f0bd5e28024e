"""The Sampling page's figures and tables (``stages/sampling.py`` wires them; ``llmviz/lessons/sampling.py`` computes
the numbers): the next-token bars transform by transform, the generated text, the beam-search tree, step mode's
candidates, three temperatures side by side and the KV-cache comparison."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from llmviz.generation.sampling import (
    BeamResult,
    KVCacheComparison,
    NextTokenView,
    StepRecord,
    is_greedy,
    next_token_view,
)
from llmviz.lessons import sampling
from ui import charts, colours, state
from ui.errors import friendly_errors
from ui.sources import ModelView
from ui.text import literal_html, tidy_floats

# a generated token's background at probability 1 (fainter as it was less likely): the text stays >= 4.5:1 on it
# (8.3:1 at full strength; the former #4c6ef5 was 4.4:1; tests/project/test_colours.py)
PROBABILITY_SHADE = (145, 167, 255)


@st.cache_data(show_spinner=False, max_entries=256)
def distribution_for(
    model_key: str, prompt: str, temperature: float, top_k: int, top_p: float, _view: ModelView
) -> NextTokenView:
    """The next-token view, cached by (model, prompt, settings): one forward pass per new input."""
    return next_token_view(_view.model, _view.tokenizer, prompt, temperature, top_k, top_p)


def distribution_panels(view: ModelView, prompt: str, temperature: float, top_k: int, top_p: float) -> None:
    """The four panels (raw softmax, temperature, top-k, top-p), each with its entropy, and the formula."""
    tokenizer = view.tokenizer
    with friendly_errors("computing the distribution"):
        shown_view = distribution_for(view.content_key, prompt, temperature, top_k, top_p, view)
        dist, shown = shown_view.distribution, shown_view.shown
        names = charts.unique_labels([tokenizer.printable(i) for i in shown])
        stages = sampling.transforms(dist, temperature, top_k, top_p)
        columns = st.columns(4)
        largest = max(float(probs[shown].max()) for _, probs in stages)
        for column, (title, probs), entropy in zip(columns, stages, dist.entropies.values()):
            with column:
                values = [float(probs[i]) for i in shown]
                figure = go.Figure(
                    go.Bar(
                        y=names,
                        x=values,
                        orientation="h",
                        marker_color="#4c6ef5",
                        texttemplate="%{x:.3f}",
                        textposition="outside",
                        cliponaxis=False,
                    )
                )
                figure.update_layout(
                    title=title, height=360, margin=charts.margins(40, 5, 5), xaxis_range=[0, min(1.0, largest * 1.25)]
                )
                figure.update_yaxes(autorange="reversed", type="category", dtick=1)  # every token named, big type too
                charts.show(figure, words=sampling.next_token_words(names, values))
                # entropy is never negative; rounding error can make a certain token's −0.000
                st.metric("entropy", f"{max(0.0, entropy):.3f} nats", help="−Σ p ln p: 0 when one token is certain.")
        kept = dist.kept
        st.caption(
            f"{kept:,} of {tokenizer.vocab_size:,} tokens can still be chosen. The 15 tokens the raw model "
            "likes most are shown in every panel."
        )
        best = shown[0]
        z = float(dist.logits[best])
        if not is_greedy(temperature):
            charts.latex(
                rf"p_i = \frac{{e^{{z_i/T}}}}{{\sum_j e^{{z_j/T}}}}:\quad z_{{\text{{top}}}} = {z:.3f},\; "
                rf"z/T = {z / temperature:.3f},\; p = {float(dist.temperature_probs[best]):.4f}"
            )
        else:
            st.latex(r"T = 0:\; \text{all probability on } \arg\max_i z_i \text{ (greedy)}")


def before_after_bars(prompt: str, shown_model: ModelView, column: str) -> None:
    """The raw model's 10 most likely next tokens for one model (step 0 or step N)."""
    found = distribution_for(shown_model.content_key, prompt, 1.0, 0, 1.0, shown_model)
    top = found.shown[:10]
    probs = found.distribution.raw_probs
    names, values = (
        charts.unique_labels([shown_model.tokenizer.printable(i) for i in top]),
        [float(probs[i]) for i in top],
    )
    figure = go.Figure(
        go.Bar(
            y=names,
            x=values,
            orientation="h",
            marker_color="#4c6ef5",
            texttemplate="%{x:.3f}",
        )
    )
    figure.update_layout(height=340, margin=charts.margins(10, 5, 5), xaxis_range=[0, 1])
    figure.update_yaxes(autorange="reversed", type="category")
    charts.show(figure, key=state.widget("next_", column), words=sampling.next_token_words(names, values))
    st.metric("entropy of the raw softmax", f"{max(0.0, found.distribution.entropies['raw softmax']):.3f} nats")


def generated_text(tokenizer, records: list[StepRecord], shown_prompt: str) -> None:
    """The generated tokens after the prompt, each shaded by the probability it had when it was chosen."""
    spans = [f"<span style='color:{colours.MUTED_TEXT};white-space:break-spaces'>{literal_html(shown_prompt)}</span>"]
    red, green, blue = PROBABILITY_SHADE
    for record in records:
        piece = tokenizer.decode([record.token])
        alternatives = " | ".join(f"{tokenizer.printable(t)} {p:.2f}" for t, p in record.runner_ups[:5]) or "none"
        alpha = 0.15 + 0.85 * record.probability
        spans.append(
            charts.token_with_number(
                piece,
                f"background:rgba({red},{green},{blue},{alpha:.2f})",
                f"{record.probability:.2f}",  # the shading's number, under the token (colour is not the only signal)
                literal_html(f"p = {record.probability:.3f} · runner-ups: {alternatives}"),
            )
            + ("<br>" if "\n" in piece else "")
        )
    # a highlighted space at the end of a line wraps too (pre-wrap let it hang past the column's edge), and a
    # run with no space in it (a long identifier, a row of '=') breaks inside the column
    st.markdown(
        "<div class='llmviz-generated' style='font-family:monospace;line-height:1.3;"
        "overflow-wrap:anywhere;word-break:break-word'>" + "".join(spans) + "</div>",
        unsafe_allow_html=True,
    )
    st.caption(
        "Under each token, and darker for a higher one: the probability the model gave it (softmax of its logits, "
        "before temperature, top-k and top-p: greedy picks the most likely, it does not make it certain). Hover for "
        "the model's runner-ups."
    )


def _edge_lines(edges, layout: dict) -> tuple[list, list]:
    """The ``(xs, ys)`` of one Plotly line trace drawing every ``(parent, child)`` edge of ``edges`` between their
    places in ``layout`` (depth, row): the rows go downwards, and a ``None`` lifts the pen between two edges.

    >>> _edge_lines([(0, 1), (0, 2)], {0: (0, 0), 1: (1, 0), 2: (1, 1)})
    ([0, 1, None, 0, 1, None], [0, 0, None, 0, -1, None])
    """
    xs, ys = [], []
    for parent, child in edges:
        (x0, y0), (x1, y1) = layout[parent], layout[child]
        xs += [x0, x1, None]
        ys += [-y0, -y1, None]
    return xs, ys


def _node_groups(nodes, on_path: set) -> dict[str, list]:
    """Beam search's candidates ``nodes`` in the tree's three legend groups: those that fell out of the beam, those
    kept in it, and those on the winning path (``on_path``: their ids).

    >>> from types import SimpleNamespace as Node
    >>> nodes = [Node(node_id=1, kept=True), Node(node_id=2, kept=False), Node(node_id=3, kept=True)]
    >>> {name: [n.node_id for n in group] for name, group in _node_groups(nodes, {3}).items()}
    {'pruned (fell out of the beam)': [2], 'kept in the beam': [1], 'winning path': [3]}
    """
    return {
        "pruned (fell out of the beam)": [n for n in nodes if not n.kept],
        "kept in the beam": [n for n in nodes if n.kept and n.node_id not in on_path],
        "winning path": [n for n in nodes if n.node_id in on_path],
    }


def beam_tree(tokenizer, result: BeamResult, prompt_ids: list[int], width: int) -> None:
    """Beam search's text and its tree: every candidate a dot, the winning path in orange."""
    st.subheader(f"Beam search, width {width}: best score {result.score:.3f}")
    st.code(tokenizer.decode(prompt_ids) + tokenizer.decode(result.tokens), language=None, wrap_lines=True)
    tree = sampling.beam_tree(result)
    layout, winners, on_path = tree.layout, tree.winners, set(tree.winners)
    figure = go.Figure()
    for kept, colour, width_ in ((False, "#dee2e6", 1), (True, "#91a7ff", 2)):
        xs, ys = _edge_lines(tree.edges[kept], layout)
        figure.add_trace(
            go.Scatter(
                x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False, line=dict(color=colour, width=width_)
            )
        )
    figure.add_trace(
        go.Scatter(
            x=[layout[n][0] for n in winners],
            y=[-layout[n][1] for n in winners],
            mode="lines",
            line=dict(color="#e8590c", width=5),
            name="the winning path",
            hoverinfo="skip",
        )
    )
    groups = _node_groups(result.nodes[1:], on_path)
    styles = {
        "pruned (fell out of the beam)": dict(size=6, color="#ced4da"),
        "kept in the beam": dict(size=10, color="#4c6ef5"),
        "winning path": dict(size=13, color="#e8590c"),
    }
    for name, nodes in groups.items():
        figure.add_trace(
            go.Scatter(
                x=[layout[n.node_id][0] for n in nodes],
                y=[-layout[n.node_id][1] for n in nodes],
                mode="markers" if name.startswith("pruned") else "markers+text",
                name=name,
                marker=styles[name],
                text=[tokenizer.printable(n.token) for n in nodes],
                textposition="top center",
                textfont=dict(
                    size=13 if name == "winning path" else 10,
                    color="#e8590c" if name == "winning path" else "#343a40",
                ),
                hovertext=[
                    f"{tokenizer.printable(n.token)}: log p = {n.log_prob:.3f}, path score = {n.score:.3f}"
                    for n in nodes
                ],
                hoverinfo="text",
            )
        )
    widest = tree.widest
    figure.update_layout(
        height=max(380, 26 * widest + 120),
        xaxis_title="depth (tokens generated)",
        yaxis_visible=False,
        margin=charts.margins(10),
        legend=dict(orientation="h", y=-0.15),
        xaxis=dict(dtick=1),
    )
    path = sorted(groups["winning path"], key=lambda n: layout[n.node_id][0])  # by depth, as the path is drawn
    charts.show(
        figure,
        words=sampling.beam_words(
            width,
            {name: len(nodes) for name, nodes in groups.items()},
            [tokenizer.printable(n.token) for n in path],
            result.score,
        ),
    )
    st.caption(
        "Every expanded candidate is a dot, best score on top within its parent's group; blue ones "
        "survived the cut to the beam width at their depth, grey ones fell out. The orange path is the "
        "winner. A path's score is the sum of its tokens' log-probabilities."
    )


def step_candidates(tokenizer, candidates: list[tuple[int, float, float, bool]]) -> None:
    """Step mode's table: the raw model's top tokens, their probability before and after the transforms."""
    frame = pd.DataFrame(
        {
            "token": [tokenizer.printable(t) for t, _, _, _ in candidates],
            "id": [t for t, _, _, _ in candidates],
            "raw probability": [p for _, p, _, _ in candidates],
            "after temperature, top-k, top-p": [final for _, _, final, _ in candidates],
            "can be sampled": ["yes" if ok else "no: filtered out" for _, _, _, ok in candidates],
        }
    )
    st.dataframe(
        tidy_floats(frame).style.format({"raw probability": "{:.4f}", "after temperature, top-k, top-p": "{:.4f}"}),
        hide_index=True,
        width="stretch",
    )


def three_texts(outputs: dict[float, str]) -> None:
    """The same prompt continued at each temperature, side by side."""
    for column, (t, text) in zip(st.columns(max(1, len(outputs))), outputs.items()):
        column.markdown(f"**T = {t:g}**")
        column.code(text, language=None, wrap_lines=True)
    st.caption("Low temperature repeats the safest tokens; high temperature tries rare ones, and drifts into nonsense.")


def kv_comparison(tokenizer, comparison: KVCacheComparison, where) -> None:
    """Both runs' times, whether they wrote the same tokens, and both texts."""
    with where:
        if not comparison.cache_supported:
            st.info(
                "This model has no KV cache (it is not a transformer, or it reads a fixed window): both runs "
                "took the same path."
            )
        m1, m2, m3 = st.columns(3)
        m1.metric("with the KV cache", f"{comparison.seconds_with_cache:.3f} s")
        m2.metric("without it", f"{comparison.seconds_without_cache:.3f} s")
        m3.metric("speed-up", f"{comparison.speedup:.1f}×")
        if comparison.identical:
            st.success(
                f"Identical: all {len(comparison.tokens_with_cache)} tokens are the same with and without the cache."
            )
        else:
            with_cache, without = comparison.tokens_with_cache, comparison.tokens_without_cache
            first = sampling.first_difference(with_cache, without)
            first = min(len(with_cache), len(without)) if first is None else first
            st.warning(
                f"The two runs part at token {first}: float rounding differs between the two paths and "
                "tipped a near-tie."
            )
    left, right = st.columns(2)
    left.markdown("**with the KV cache**")
    left.code(tokenizer.decode(comparison.tokens_with_cache), language=None, wrap_lines=True)
    right.markdown("**without it**")
    right.code(tokenizer.decode(comparison.tokens_without_cache), language=None, wrap_lines=True)
    st.caption(
        "Times are wall-clock on this server, shared with everyone using it: run it twice and they vary. "
        "The gap grows with the text: without the cache each token costs work proportional to the whole "
        "window, with it one position."
    )
