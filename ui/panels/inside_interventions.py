"""Inside the model's intervention tabs: knock out heads, patch activations, steer (``stages/inside.py`` wires them).

A sweep (every head, every layer × position) is small for the shipped GPT and large for GPT-2:
:func:`llmviz.interpret.interventions.fits_in_page` decides. A small one runs in the script run, remembered by content
(the model's key and the token ids) for every session; a large one is a lab job of this session with progress and a
Stop button (:func:`sweep`), and its result (complete, or what it measured before Stop) stays with the session.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Callable
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

from llmviz.errors import LlmvizError
from llmviz.interpret import ablation, interventions, patching, steering
from llmviz.lessons import inside, words
from llmviz.tokenizers.base import TokenizerError
from llmviz.training import footprint, tasks
from ui import boxes, charts, picker, share, state
from ui.panels import task_jobs
from ui.panels.inside import label, view_ids
from ui.text import literal_html, literal_markdown


# ------------------------------------------------------------------ interventions: sweeps, charts, tables
def spec_key(*parts: Any) -> str:
    """A short content key for a request (the model's key, the token ids, the settings).

    >>> spec_key("shipped:gpt", [1, 2, 3], "zero") == spec_key("shipped:gpt", [1, 2, 3], "zero")
    True
    """
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:20]


def sweep(
    kind: str,
    spec: str,
    fits: bool,
    compute: Callable[[], Any],
    loop: Callable,
    *,
    label: str,
    total: int,
    job_slot: state.Slot,
    what: str,
    model=None,
) -> Any:
    """The result of the sweep ``spec`` of ``kind`` ("ablation", "patching"): computed here when it ``fits`` (the
    caller's ``compute`` is cached by content), else by a lab job running ``loop`` (started once per spec), whose
    progress and Stop are drawn live; None while it runs. ``model``: the model the job gets a copy of (its memory is
    the job's footprint, with one batch of activations)."""
    if fits:
        return compute()
    done = state.SWEEP_RESULTS.setdefault()
    if kind in done and done[kind][0] == spec:
        return done[kind][1]
    running = job_slot.get()
    if running is None or running.get("spec") != spec:
        try:
            working = interventions.BATCH_BYTES
            if model is not None:
                working += sum(p.numel() * p.element_size() for p in model.parameters())
            job = picker.runs().submit_task(
                loop,
                label=label,
                total=total,
                returns_when_stopped=True,
                footprint=footprint.task(label, working_bytes=working),
            )
        except LlmvizError as error:
            st.warning(str(error))
            state.SWEEP_ASKED.setdefault().pop(kind, None)
            return None
        job_slot.set({"id": job.id, "spec": spec})
    ended = task_jobs.follow_task(
        job_slot,
        name=f"inside.{kind}_job",
        describe=lambda status: f"{status.step} of {status.total} {what} (a lab job: this model is large for the page)",
    )
    if ended is None:
        return None
    if ended.result is None:
        st.warning(f"The sweep ended without a result: {ended.status().error or ended.status().describe()}")
        state.SWEEP_ASKED.setdefault().pop(kind, None)
        return None
    done[kind] = (spec, ended.result)
    return ended.result


def effects_figure(effects: ablation.HeadEffects) -> go.Figure:
    """Layer × head: how much the loss rises with that head knocked out (red: the loss rises; blue: it falls)."""
    grid = effects.effects  # (L, H)
    layers, heads = grid.shape
    biggest = float(torch.nan_to_num(grid.abs(), nan=0.0).max()) or 1e-6
    figure = charts.heatmap(
        [[None if math.isnan(v) else v for v in row] for row in grid.tolist()],
        x_labels=[f"head {h}" for h in range(heads)],
        y_labels=[f"layer {layer}" for layer in range(layers)],
        colorscale="RdBu_r",
        zmid=0.0,
        zmin=-biggest,
        zmax=biggest,
        text_format="+.3f",
        x_title="head knocked out",
        y_title="layer",
        height=max(220, min(520, 44 * layers + 110)),
    )
    figure.update_traces(
        hovertemplate="%{y}, %{x}<br>loss change %{z:+.4f} nats<extra></extra>",
        colorbar=dict(title=dict(text="Δ loss")),
    )
    return figure


def effects_frame(effects: ablation.HeadEffects) -> pd.DataFrame:
    """The grid as a table: one row per head (for the CSV download)."""
    rows = []
    for layer in range(effects.losses.shape[0]):
        for head in range(effects.losses.shape[1]):
            rows.append(
                {
                    "layer": layer,
                    "head": head,
                    "loss with every head": effects.clean_loss,
                    "loss without this head": float(effects.losses[layer, head]),
                    "change": float(effects.effects[layer, head]),
                    "ablation": effects.mode,
                }
            )
    return pd.DataFrame(rows)


def token_change_figure(result: ablation.Ablation, tokens: list[str]) -> go.Figure:
    """The loss on every next token after the heads are knocked out, minus before."""
    return change_figure((result.token_losses_after - result.token_losses_before).tolist(), tokens)


def change_figure(change: list[float], tokens: list[str]) -> go.Figure:
    """The loss on every next token after a knock-out, minus before (red: harder to predict)."""
    figure = go.Figure(
        go.Bar(
            x=charts.unique_labels(tokens[1:]),
            y=change,
            marker_color=["#c92a2a" if value > 0 else "#1c7ed6" for value in change],
            hovertemplate="predicting %{x}<br>loss change %{y:+.3f} nats<extra></extra>",
        )
    )
    figure.update_layout(
        height=260,
        margin=charts.margins(10, 10),
        yaxis_title="Δ loss (nats)",
        xaxis=dict(type="category", tickangle=-60 if len(tokens) > 16 else 0),
    )
    return figure


def patching_figure(result: patching.Patching, columns: list[str]) -> go.Figure:
    """Layer × position (or × head): the share of the logit difference each patch restores."""
    restored = result.restored  # (L, columns)
    layers = restored.shape[0]
    finite = restored[~restored.isnan()].abs()  # the scale holds every share (1 at least: the clean answer)
    bound = max(1.0, float(finite.max())) if finite.numel() else 1.0
    figure = charts.heatmap(
        [[None if math.isnan(v) else v for v in row] for row in restored.tolist()],
        x_labels=columns,
        y_labels=[f"layer {layer}" for layer in range(layers)],
        colorscale="RdBu_r",
        zmid=0.0,
        zmin=-bound,
        zmax=bound,
        text_format=".2f",
        x_title="head patched" if result.component == "attn.z" else "position patched",
        y_title="layer",
        height=max(220, min(560, 44 * layers + 140)),
    )
    figure.update_traces(
        hovertemplate="%{y}, %{x}<br>share restored %{z:.3f}<extra></extra>",
        colorbar=dict(title=dict(text="restored")),
    )
    return figure


def patching_frame(result: patching.Patching, columns: list[str], answer: str, wrong: str) -> pd.DataFrame:
    rows = []
    for layer in range(result.differences.shape[0]):
        for index, column in enumerate(columns):
            rows.append(
                {
                    "component": result.component,
                    "layer": layer,
                    "head" if result.component == "attn.z" else "position": column,
                    "logit difference": float(result.differences[layer, index]),
                    "share restored": float(result.restored[layer, index]),
                    "answer": answer,
                    "wrong": wrong,
                    "clean difference": result.clean_difference,
                    "corrupted difference": result.corrupted_difference,
                }
            )
    return pd.DataFrame(rows)


@st.cache_data(show_spinner="Knocking out each head in turn…", max_entries=64)
def _head_effects(key: str, ids: tuple[int, ...], mode: str, _model) -> ablation.HeadEffects:
    return ablation.head_effects(_model, list(ids), mode)


@st.cache_data(show_spinner=False, max_entries=128)
def _ablate(key: str, ids: tuple[int, ...], knocked: tuple[tuple[int, int], ...], mode: str, _model):
    return ablation.ablate(_model, list(ids), knocked, mode)


def head_name(pair: tuple[int, int]) -> str:
    return f"layer {pair[0]}, head {pair[1]}"


def ablation_grid(view, ids: list[int], mode: str) -> ablation.HeadEffects | None:
    """Every head knocked out alone: asked for with the button (after a guess), in the page or as a lab job."""
    config = view.model.config
    every = [(layer, head) for layer in range(config.n_layers) for head in range(config.n_heads)]
    st.subheader("Every head, knocked out alone")
    guess = st.selectbox(
        "First, your guess: which head matters most for this text?",
        [None, *every],
        format_func=lambda pair: "(no guess)" if pair is None else inside.head_name(pair),
        key=state.widget("ablation_guess"),
    )
    spec = spec_key(view.content_key, ids, mode)
    asked = state.SWEEP_ASKED.setdefault()
    if st.button("Knock out each head, one at a time", type="primary", key=state.widget("ablation_run")):
        asked["ablation"] = spec
    if asked.get("ablation") != spec:
        st.caption(
            f"The {len(every)} heads are knocked out one after the other and the loss on the text measured each time."
        )
        return None
    result = sweep(
        "ablation",
        spec,
        interventions.fits_in_page(config, len(ids), len(every) + 1),
        lambda: _head_effects(view.content_key, tuple(ids), mode, view.model),
        functools.partial(tasks.head_effects_sweep, model=view.model, ids=ids, mode=mode),
        label=f"Knock out every head · {view.label}",
        total=len(every),
        job_slot=state.ABLATION_JOB,
        what="heads knocked out",
        model=view.model,
    )
    if result is not None and guess is not None:
        ranking = [(layer, head) for _effect, layer, head in result.ranked()]
        if guess in ranking:
            place = ranking.index(guess) + 1
            st.markdown(
                f"Your guess, **{inside.head_name(guess)}**, comes {place} of {len(ranking)}: knocking it out changes "
                f"the loss by {float(result.effects[guess]):+.3f} nats (the most: {inside.head_name(ranking[0])}, "
                f"{float(result.effects[ranking[0]]):+.3f})."
            )
    return result


def draw_effects(view, result: ablation.HeadEffects, ids: list[int]) -> None:
    charts.show(
        effects_figure(result), key=state.widget("ablation_grid"), words=inside.knockout_words(result.effects.tolist())
    )
    biggest, layer, head = result.ranked()[0]
    measured = "" if result.complete else f" Stopped: {result.done} of {result.losses.numel()} heads measured."
    st.caption(
        f"The loss on these {len(ids)} tokens is {result.clean_loss:.4f} nats with every head; each cell is the "
        f"change without that head ({ablation.MODE_HELP[result.mode]}). Knocking out {inside.head_name((layer, head))} "
        f"changes it most: {biggest:+.4f}.{measured}"
    )
    st.download_button(
        "Download the grid (CSV)",
        effects_frame(result).to_csv(index=False),
        file_name="llmviz-head-ablation.csv",
        mime="text/csv",
        key=state.widget("ablation_download"),
    )


def draw_knockout(view, ids: list[int], mode: str) -> None:
    """Several heads knocked out together: the loss before and after, and the change on every token."""
    config = view.model.config
    every = [f"{layer}.{head}" for layer in range(config.n_layers) for head in range(config.n_heads)]
    st.subheader("Several heads together")
    kept = [value for value in state.value("knocked") or [] if value in every]
    if kept != (state.value("knocked") or []):
        state.set_value("knocked", kept)  # a head of another model (or a hand-made link) is dropped
    chosen = st.multiselect(
        "Knock out these heads together",
        every,
        format_func=lambda value: f"layer {value.split('.')[0]}, head {value.split('.')[1]}",
        placeholder="Pick heads: the reddest cells above, or your guess",
        **share.bind("knocked"),
    )
    if not chosen:
        return
    knocked = tuple(tuple(int(part) for part in value.split(".")) for value in chosen)
    result = _ablate(view.content_key, tuple(ids), knocked, mode, view.model)
    charts.latex(
        rf"\mathcal{{L}}_{{\text{{{len(knocked)} head{'s' if len(knocked) > 1 else ''} out}}}} - \mathcal{{L}} = "
        rf"{result.loss_after:.4f} - {result.loss_before:.4f} = {result.change:+.4f}\ \text{{nats}}"
    )
    tokens = [label(view, i) for i in ids]
    charts.show(
        token_change_figure(result, tokens),
        key=state.widget("ablation_tokens"),
        words=inside.change_words(
            (result.token_losses_after - result.token_losses_before).tolist(),
            charts.unique_labels(tokens[1:]),
            f"head{'s' if len(chosen) > 1 else ''} {words.listed(chosen)}",
        ),
    )
    st.caption("The loss on every next token without those heads, minus with them: red, it got harder to predict.")


@st.cache_data(show_spinner="Patching every layer and position…", max_entries=64)
def cached_patching(key: str, clean: tuple, corrupted: tuple, answer: int, wrong: int, component: str, _model):
    return patching.patching(_model, list(clean), list(corrupted), answer, wrong, component)


@st.cache_data(show_spinner=False, max_entries=128)
def cached_answers(key: str, clean: tuple, corrupted: tuple, _model) -> patching.Answers:
    return patching.answers(_model, list(clean), list(corrupted))


def answer_token(view, name: str, fallback: int, what: str) -> int:
    """The token typed in the box ``name`` (one token), or ``fallback`` when the box is empty."""
    typed = state.value(name) or ""
    if not typed:
        return fallback
    return inside.one_token(view.tokenizer, view.model.config, typed, what)


DIFFERS = ' style="background:#ffe066;border:2px solid #5c5f6a" title="differs from the other prompt"'


def pair_chips(view, clean: list[int], corrupted: list[int]) -> None:
    """Both prompts token by token, the tokens that differ highlighted."""
    for name, ids, other in (("clean", clean, corrupted), ("corrupted", corrupted, clean)):
        differs = [i >= len(other) or t != other[i] for i, t in enumerate(ids)]
        pieces = [  # a token that differs: yellow, a thick border and its name (colour is not the only signal)
            f'<span class="tok"{DIFFERS if changed else ""}>{literal_html(label(view, t))}</span>'
            for t, changed in zip(ids, differs)
        ]
        st.markdown(
            "<style>.tok{display:inline-block;margin:1px;padding:1px 3px;border-radius:3px;"
            "border:1px solid #ddd;font-family:monospace;white-space:pre}</style>"
            f'<div style="line-height:1.9"><b>{name}</b> ({len(ids)} tokens): {"".join(pieces)}</div>',
            unsafe_allow_html=True,
        )


def patching_grid(
    view, clean: list[int], corrupted: list[int], answer: int, wrong: int, component: str, drawn_at_once: bool = False
) -> None:
    """Every layer × position (or head) patched: asked for with the button (after a guess), in the page or as a lab
    job, then drawn. ``drawn_at_once``: the page's default pair, drawn without the button when it fits in the page
    (computed once for everyone with this model: ``cached_patching`` is keyed by the model's content and the pair)."""
    config = view.model.config
    cells = len(patching.cells_of(view.model, component, len(clean), patching.first_difference(clean, corrupted)))
    spec = spec_key(view.content_key, clean, corrupted, answer, wrong, component)
    st.subheader("Every layer × head" if component == "attn.z" else "Every layer × position")
    asked = state.SWEEP_ASKED.setdefault()
    fits = interventions.fits_in_page(config, len(clean), cells)
    if drawn_at_once and fits:  # the section opens on the default pair's picture: no button before it
        asked["patching"] = spec
    elif st.button("Patch every one", type="primary", key=state.widget("patching_run")):
        asked["patching"] = spec
    if asked.get("patching") != spec:
        st.caption(f"Before you press: where do you expect the answer to be? ({cells} patched runs.)")
        return
    result = sweep(
        "patching",
        spec,
        fits,
        lambda: cached_patching(view.content_key, tuple(clean), tuple(corrupted), answer, wrong, component, view.model),
        functools.partial(
            tasks.patching_sweep,
            model=view.model,
            clean=clean,
            corrupted=corrupted,
            answer=answer,
            wrong=wrong,
            component=component,
        ),
        label=f"Activation patching · {view.label}",
        total=config.n_layers * (config.n_heads if component == "attn.z" else len(clean)),
        job_slot=state.PATCHING_JOB,
        what="patches measured",
        model=view.model,
    )
    if result is not None:
        draw_patching(view, result, corrupted, clean)


def draw_patching(view, result: patching.Patching, corrupted: list[int], clean: list[int]) -> None:
    if result.problem is not None:  # no share has a meaning: said in words, nothing drawn (issue 50 §6)
        st.warning(result.problem)
        return
    if result.component == "attn.z":
        columns = [f"head {h}" for h in range(result.differences.shape[1])]
    else:
        columns = charts.unique_labels(
            [label(view, c) if c == k else f"{label(view, k)}→{label(view, c)}" for k, c in zip(clean, corrupted)]
        )
    layers = [f"layer {layer}" for layer in range(result.restored.shape[0])]
    charts.show(
        patching_figure(result, columns),
        key=state.widget("patching_grid"),
        words=inside.patching_words(layers, columns, result.restored.tolist()),
    )
    d_clean, d_corrupted = result.clean_difference, result.corrupted_difference
    charts.latex(
        rf"\text{{share restored}} = \frac{{d_{{\text{{patched}}}} - d_{{\text{{corrupted}}}}}}"
        rf"{{d_{{\text{{clean}}}} - d_{{\text{{corrupted}}}}}} = \frac{{d_{{\text{{patched}}}} - ({d_corrupted:.3f})}}"
        rf"{{{d_clean:.3f} - ({d_corrupted:.3f})}}"
    )
    first = 0 if result.component == "attn.z" else result.first_difference + 1
    away = [  # the changed token itself restores everything at layer 0: the interest is where it goes next
        (float(value), layer, index)
        for layer, row in enumerate(result.restored.tolist())
        for index, value in enumerate(row)
        if index >= first and value == value
    ]
    measured = "" if result.complete else f" Stopped: {result.done} of {result.differences.numel()} cells measured."
    where = ""
    if away:
        best, layer, index = max(away)
        after = "" if result.component == "attn.z" else " after the changed token"
        where = f" The most{after}: layer {layer}, {columns[index]} ({best:.2f})."
    st.caption(
        "1 = that activation alone brings the clean answer back; 0 = it carries none of the difference; below 0 it "
        "pushes towards the wrong token, above 1 past the clean run."
        f"{where}{measured}"
    )
    st.download_button(
        "Download the grid (CSV)",
        patching_frame(result, columns, label(view, result.answer), label(view, result.wrong)).to_csv(index=False),
        file_name="llmviz-activation-patching.csv",
        mime="text/csv",
        key=state.widget("patching_download"),
    )


def steering_direction(view, kind: str, layer: int):
    if kind == "token":
        typed = state.value("steer_token") or ""
        ids = view_ids(view, typed, "token") if typed else []
        if len(ids) != 1:
            raise TokenizerError("Type one token to steer along (a word the tokenizer keeps whole, such as ' list').")
        return steering.token_direction(view.model, ids[0]), f"the direction of {label(view, ids[0])!r}"
    sets = []
    for name, default in (("steer_positive", inside.DEFAULT_POSITIVE), ("steer_negative", inside.DEFAULT_NEGATIVE)):
        lines = inside.prompt_lines(boxes.held(name, default, inside.TEXT_LIMITS[name]))
        sets.append([view_ids(view, line, "prompt") for line in lines])
    return _mean_difference(
        view.content_key, tuple(map(tuple, sets[0])), tuple(map(tuple, sets[1])), layer, view.model
    ), (f"the mean difference of {len(sets[0])} and {len(sets[1])} prompts")


@st.cache_data(show_spinner=False, max_entries=64)
def _mean_difference(key: str, positive: tuple, negative: tuple, layer: int, _model):
    return steering.mean_difference(_model, [list(p) for p in positive], [list(n) for n in negative], layer)


@st.cache_data(show_spinner="Generating with and without steering…", max_entries=64)
def _steered(key: str, ids: tuple, layer: int, direction: tuple, alpha: float, seed: int, _model):
    return inside.steered_pair(_model, list(ids), layer, torch.tensor(direction), alpha, seed)


inside.NEW_TOKENS = 30  # written with and without steering


def steered_texts(view, ids: list[int], layer: int, direction, alpha: float, seed: int):
    """The plain and the steered continuation: written here for a small model, by a lab job (asked for with a button)
    for a large one; None until there is one."""
    spec = spec_key(view.content_key, ids, layer, direction.tolist(), alpha, seed)
    work = steering.generation_work(view.model.config, len(ids), inside.NEW_TOKENS)
    fits = work <= interventions.IN_PAGE_WORK
    if not fits:
        asked = state.SWEEP_ASKED.setdefault()
        if st.button("Write both texts", type="primary", key=state.widget("steer_run")):
            asked["steering"] = spec
        if asked.get("steering") != spec:
            st.caption(
                f"This model is large: writing {inside.NEW_TOKENS} tokens twice runs as a lab job of yours (with its "
                "progress and a Stop button)."
            )
            return None
    return sweep(
        "steering",
        spec,
        fits,
        lambda: _steered(view.content_key, tuple(ids), layer, tuple(direction.tolist()), alpha, seed, view.model),
        functools.partial(
            tasks.steering_generation,
            model=view.model,
            ids=ids,
            layer=layer,
            direction=direction.tolist(),
            alpha=alpha,
            new_tokens=inside.NEW_TOKENS,
            temperature=inside.STEER_TEMPERATURE,
            seed=seed,
        ),
        label=f"Steering · {view.label}",
        total=2 * inside.NEW_TOKENS,
        job_slot=state.STEERING_JOB,
        what="tokens written",
        model=view.model,
    )


def plain_and_steered(view, prompt: str, pair, heading: str) -> None:
    """The text written without steering beside the text written with it (a direction or a feature's), one column
    each; ``heading`` says what was added."""
    left, right = st.columns(2)
    left.markdown("**Without steering**")
    left.code(prompt + view.tokenizer.decode(pair.plain), language=None, wrap_lines=True)
    right.markdown(f"**{heading}**")
    right.code(prompt + view.tokenizer.decode(pair.steered), language=None, wrap_lines=True)


def draw_steered(view, prompt: str, ids: list[int], pair, layer: int, alpha: float, what: str, seed: int) -> None:
    """The plain and the steered text side by side, how long the added vector is, and both as JSON."""
    norm = steering.stream_norm(view.model, ids, layer)
    plain_and_steered(view, prompt, pair, f"With α = {alpha:g} × {literal_markdown(what)}, at layer {layer}")
    st.caption(
        f"|α · direction| = {abs(alpha) * pair.direction_norm:.2f}, against a residual stream {norm:.2f} long on "
        f"average entering block {layer}. Both texts sample {inside.NEW_TOKENS} tokens at temperature "
        f"{inside.STEER_TEMPERATURE:g} with the same "
        f"seed ({seed}, the sidebar's): where they differ, the steering did it."
    )
    st.download_button(
        "Download both texts (JSON)",
        json.dumps(
            {
                "prompt": prompt,
                "layer": layer,
                "alpha": alpha,
                "direction": what,
                "plain": view.tokenizer.decode(pair.plain),
                "steered": view.tokenizer.decode(pair.steered),
            },
            ensure_ascii=False,
            indent=1,
        ),
        file_name="llmviz-steering.json",
        mime="application/json",
        key=state.widget("steer_download"),
    )
