"""Inside the model's Features tab: a sparse autoencoder's feature browser (the most readable features first, a
feature's distinct top contexts, its histogram and logit effects), the search, steering and knock-out with a feature,
and an autoencoder of the student's own trained as a lab run (``stages/inside.py`` wires it; the numbers come from
``llmviz/lessons/inside.py`` and ``llmviz.interpret.features``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from llmviz.data.corpus import text_key
from llmviz.errors import LlmvizError
from llmviz.interpret import features, interventions, sae
from llmviz.lab.records import AUTOENCODER
from llmviz.lessons import inside, words
from llmviz.lessons.inside import SAE_SIZES, SAE_TRAIN_STEPS, hook_points, sae_config
from llmviz.training import footprint
from ui import charts, lab, picker, sections, shared_sidebar, state
from ui.errors import friendly_errors
from ui.panels import runs
from ui.panels.inside import label, view_ids
from ui.panels.inside_interventions import change_figure, plain_and_steered
from ui.stages import ROOT
from ui.text import literal_markdown

# ------------------------------------------------------------------ features: a sparse autoencoder's dictionary
SHIPPED_SAE = ROOT / "data" / "gpt-python-docs-sae"
SHIPPED_SAE_LABEL = "Shipped with llmviz (trained by `interpret sae train` on the shipped GPT)"
CORPUS_FILE = ROOT / "data" / "python-manual.txt"  # the shipped GPT's corpus, as the CLI reads it


def _signature(path) -> tuple:
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else []
    return tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files)


@st.cache_resource(show_spinner="Loading the autoencoder…", max_entries=4)
def _shipped_sae(path: str, signature: tuple) -> sae.LoadedSae:
    """The shipped autoencoder, read once for every student (shared, read-only: its files are never written)."""
    return sae.load(path)


@st.cache_resource(show_spinner=False, max_entries=16)
def _run_sae(sae_id: str, _meta: dict, _state: dict) -> sae.LoadedSae:
    """A run's autoencoder at one kept step, read by the library (``sae.from_state``: its shapes checked); ``sae_id`` =
    its unguessable job id and step: only its student has it."""
    loaded = sae.from_state(_meta, _state, f"the autoencoder run {sae_id}")
    loaded.sae.requires_grad_(False)  # shared read-only between the student's pages
    return loaded


def sae_choices() -> dict[str, str]:
    """The autoencoders the tab offers: the shipped one, this session's autoencoder runs (newest last), then the
    student's others the lab keeps (earlier sessions', earlier servers', another app process's: reopened from their
    kept snapshots)."""
    choices = {"shipped": SHIPPED_SAE_LABEL} if (SHIPPED_SAE / sae.CONFIG_FILE).is_file() else {}
    for job_id in state.SAE_RUNS.setdefault():
        job = picker.runs().live(job_id)
        if job is not None:
            choices[f"run:{job_id}"] = f"Yours: {job.label} ({job.status().describe()})"
    for view in lab.autoencoder_runs():
        choices.setdefault(f"run:{view.id}", f"Yours: {view.label} ({lab.state_text(view)})")
    return choices


def _kept_sae(run_id: str) -> tuple[str, sae.LoadedSae] | None:
    """A kept autoencoder run at its newest kept snapshot, read from the lab's files (None: none kept yet)."""
    kept = lab.snapshots(run_id)
    if not kept:
        return None
    step = max(snapshot.step for snapshot in kept)
    weights, meta = lab.open_snapshot(run_id, step)
    description = meta.get("model") or {}
    sae_meta = {"config": description["config"], "d_in": description["d_in"], "model": description.get("model", {})}
    return f"run:{run_id}@{step}", _run_sae(f"{run_id}@{step}", sae_meta, weights)


def loaded_sae(choice: str) -> tuple[str, sae.LoadedSae] | None:
    """(the autoencoder's content id, the autoencoder) of a choice; None while a run has no snapshot yet."""
    if choice == "shipped":
        signature = _signature(SHIPPED_SAE)
        return f"shipped#{weights_id(signature)}", _shipped_sae(str(SHIPPED_SAE), signature)
    job_id = choice.removeprefix("run:")
    job = picker.runs().live(job_id)
    info = state.SAE_RUNS.setdefault().get(job_id)
    if job is None or info is None:  # not trained by this session: as the lab keeps it
        return _kept_sae(job_id)
    if job.info is None or job.snapshots is None or not job.snapshots.steps():
        return None
    step, weights = job.snapshots.resolve(None)
    description = job.info.description
    meta = {"config": description["config"], "d_in": description["d_in"], "model": info["model"]}
    return f"run:{job_id}@{step}", _run_sae(f"{job_id}@{step}", meta, weights)


def weights_id(signature: tuple) -> str:
    return hashlib.sha256(repr(signature).encode()).hexdigest()[:16]


@st.cache_data(show_spinner=False, max_entries=64)
def _fits(key: str, sae_id: str, _meta: dict, _model) -> str:
    """'' when the autoencoder was trained on these weights, else the library's one-line reason."""
    try:
        sae.check_for_model(_meta, _model)
    except LlmvizError as error:
        return str(error)
    return ""


@st.cache_data(show_spinner=False, max_entries=16)
def model_fingerprint(key: str, _model) -> str:
    return sae.model_fingerprint(_model)


def features_corpus() -> tuple[str, str] | None:
    """``(label, text)`` of the corpus the tab reads: the sidebar's, where the Python manual is the file the shipped
    GPT and its autoencoder were trained on (``data/python-manual.txt``, its paragraphs unwrapped); None after
    saying why there is none."""
    if shared_sidebar.settings().corpus == "python-docs" and CORPUS_FILE.is_file():
        return "the Python manual", CORPUS_FILE.read_text(encoding="utf-8")
    return shared_sidebar.corpus_text()


@st.cache_resource(show_spinner="Reading the corpus through the autoencoder…", max_entries=6)
def _feature_corpus(key: str, sae_id: str, text_id: str, _text: str, _model, _tokenizer, _sae, hook: str):
    """The browser's corpus index, keyed by the model's weights id, the autoencoder's and the corpus's content
    (read-only, shared only between students who picked the same weights, autoencoder and text)."""
    ids = inside.feature_corpus_ids(_tokenizer, inside.readable(_tokenizer, _text[: inside.MAX_CORPUS_CHARS]))
    return inside.feature_corpus(_model, _sae, hook, ids)


@st.cache_data(show_spinner="Reading the feature…", max_entries=128)
def _feature_card(key: str, sae_id: str, feature: int, _model, _sae, hook: str, _corpus) -> inside.FeatureCard:
    return inside.feature_card(_model, _sae, hook, _corpus, feature)


@st.cache_data(show_spinner=False, max_entries=64)
def _feature_search(key: str, sae_id: str, ids: tuple, _model, _sae, hook: str):
    return inside.feature_search(_model, _sae, hook, list(ids))


@st.cache_data(show_spinner="Generating with and without the feature…", max_entries=64)
def _feature_steer(key: str, sae_id: str, ids: tuple, feature: int, alpha: float, seed: int, _model, _sae, hook: str):
    return inside.feature_steer(_model, _sae, hook, list(ids), feature, alpha, seed)


@st.cache_data(show_spinner=False, max_entries=64)
def _feature_knockout(key: str, sae_id: str, ids: tuple, knocked: tuple, mode: str, _model, _sae, hook: str):
    return features.knock_out(_model, _sae, hook, list(ids), list(knocked), mode)


class Browser:
    """What the Features tab reads: the picked model, the picked autoencoder and its corpus index."""

    def __init__(self, view, sae_id: str, loaded: sae.LoadedSae, text: tuple[str, str]):
        self.view, self.sae_id, self.loaded = view, sae_id, loaded
        self.sae, self.hook = loaded.sae, loaded.hook
        self.label_key = sae_id.split("@")[0]  # a run's labels stay with it from step to step
        self.corpus_label, content = text
        self.corpus = _feature_corpus(
            view.content_key, sae_id, text_key(content), content, view.model, view.tokenizer, self.sae, self.hook
        )

    def labels(self) -> dict[int, str]:
        """The shipped labels (if any) under the student's own, kept in their session for this autoencoder."""
        return {**self.loaded.labels, **state.SAE_LABELS.setdefault().get(self.label_key, {})}

    def card(self, feature: int) -> inside.FeatureCard:
        view = self.view
        return _feature_card(view.content_key, self.sae_id, feature, view.model, self.sae, self.hook, self.corpus)


def open_browser(view, choice: str) -> Browser | None:
    """The browser of the picked autoencoder for the picked model; an autoencoder for another model is refused with
    the library's reason (a line on the page), a run without a snapshot yet is waited for."""
    found = loaded_sae(choice)
    if found is None:
        st.info("Your autoencoder is still gathering activations: its features appear at its first snapshot.")
        return None
    sae_id, loaded = found
    why = _fits(view.content_key, sae_id, loaded.meta, view.model)
    if why:
        st.warning(f"{why} Pick the model it was trained on in the sidebar, or train one for this model below.")
        return None
    text = features_corpus()
    return Browser(view, sae_id, loaded, text) if text is not None else None


def draw_feature_table(browser: Browser) -> None:
    """The most readable features as a compact table (``inside.feature_rows``), the share of tokens each fires on as a
    bar."""
    rows = inside.feature_rows(browser.corpus, browser.labels())
    frame = pd.DataFrame(rows)
    st.dataframe(
        frame,
        hide_index=True,
        height=360,
        width="stretch",
        key=state.widget("feature_table"),
        on_select=functools.partial(_table_pick, [row["feature"] for row in rows]),
        selection_mode="single-row",
        column_config={
            "fires on": st.column_config.ProgressColumn("fires on", format="percent", min_value=0.0, max_value=1.0),
            "mean when firing": st.column_config.NumberColumn(format="%.2f"),
            "max": st.column_config.NumberColumn(format="%.2f"),
        },
    )
    index = browser.corpus.index
    st.caption(
        f"{browser.sae.d_sae:,} features at {browser.hook}, read on {index.tokens:,} tokens of "
        f"{literal_markdown(browser.corpus_label)}; "
        f"{index.dead} never fired there. The most readable first: those whose strongest places sit on one token "
        "(then the more frequent first). Click a row to show that feature."
    )


def _table_pick(features: list[int]) -> None:
    """A row clicked in the table: show that feature."""
    picked = state.value(state.widget("feature_table")).selection.rows
    if picked:
        state.set_value("feature", features[picked[0]])


def activation_chips(view, context, peak_scale: float) -> str:
    """One corpus window as token chips, green by the feature's activation (the top token outlined)."""
    chips = []
    for position, (token, value) in enumerate(zip(context.ids, context.values)):
        alpha = min(1.0, value / peak_scale) if peak_scale > 0 else 0.0
        outline = "border:1px solid #2b8a3e;" if position == context.peak else "border:1px solid #ddd;"
        style = f"background:rgba(47,158,68,{alpha:.2f});{outline}padding:1px 3px;border-radius:3px"
        # where it fires, the activation is written under the token too: the green is not the only signal
        number = f"{value:.2f}" if alpha >= 0.05 else ""
        chips.append(charts.token_with_number(label(view, token), style, number, f"activation {value:.3f}", "tok"))
    return "".join(chips)


def histogram_figure(card: inside.FeatureCard) -> go.Figure:
    """The feature's activations where it fires, binned."""
    centres = ((card.edges[:-1] + card.edges[1:]) / 2).tolist()
    figure = go.Figure(
        go.Bar(
            x=centres,
            y=card.counts.tolist(),
            marker_color="#2f9e44",
            hovertemplate="activation ≈ %{x:.2f}<br>%{y} tokens<extra></extra>",
        )
    )
    figure.update_layout(
        height=200, margin=charts.margins(10, 10), xaxis_title="activation (where it fires)", yaxis_title="tokens"
    )
    return figure


def logit_frame(view, effects) -> pd.DataFrame:
    promoted = [f"{label(view, t)!r} {v:+.2f}" for t, v in effects.promoted]
    suppressed = [f"{label(view, t)!r} {v:+.2f}" for t, v in effects.suppressed]
    return pd.DataFrame({"promotes": promoted, "suppresses": suppressed})


def draw_feature_card(browser: Browser, feature: int) -> None:
    """One feature: where it fires most (the corpus, coloured), its histogram, the tokens it writes towards."""
    view, card = browser.view, browser.card(feature)
    st.markdown(f"**Feature {feature}** fires on {card.frequency:.2%} of the corpus's tokens. Where it fires most:")
    if not card.contexts:
        st.caption("It never fired on these tokens: a dead feature.")
    else:
        peak = max(max(c.values) for c in card.contexts)
        lines = "".join(
            f'<div style="margin-bottom:4px">{activation_chips(view, c, peak)}</div>' for c in card.contexts
        )
        st.markdown(
            f'<div style="line-height:1.3">{lines}</div>',
            unsafe_allow_html=True,
        )
    left, right = st.columns([3, 2])
    with left:
        centres = ((card.edges[:-1] + card.edges[1:]) / 2).tolist()
        charts.show(
            histogram_figure(card),
            key=state.widget("feature_histogram"),
            words=inside.histogram_words(feature, centres, card.counts.tolist()),
        )
    right.dataframe(logit_frame(view, card.effects), hide_index=True, width="stretch", height=200)
    right.caption("Its decoder direction through the unembedding: the logits it raises and lowers per unit.")


def _keep_label(sae_id: str, feature: int, key: str) -> None:
    """The label typed (a callback: kept before the table is drawn again, so the table shows it at once)."""
    labels = state.SAE_LABELS.setdefault().setdefault(sae_id, {})
    typed = (state.value(key) or "").strip()
    if typed:
        labels[feature] = typed[:200]
    else:
        labels.pop(feature, None)


def label_box(browser: Browser, feature: int) -> None:
    """The student's name for the feature, kept in their session beside the autoencoder (the shipped one's files
    are never written: download the labels to keep them, and give them to ``interpret sae features --label``)."""
    key = state.widget("feature_label_", re.sub(r"\W", "_", browser.label_key), feature)
    st.text_input(
        f"Your label for feature {feature}",
        browser.labels().get(feature, ""),
        max_chars=200,
        key=key,
        on_change=_keep_label,
        args=(browser.label_key, feature, key),
        placeholder="What does it fire on? e.g. the keyword after a quote",
    )
    labels = state.SAE_LABELS.setdefault().get(browser.label_key, {})
    if labels:
        st.download_button(
            "Download your labels (labels.json)",
            json.dumps({str(k): v for k, v in sorted(labels.items())}, ensure_ascii=False, indent=1),
            file_name="labels.json",
            mime="application/json",
            key=state.widget("feature_labels_download"),
        )
    st.caption(
        "Your labels are kept with this autoencoder in your session (the shipped autoencoder is read-only, so they "
        "are never written into it): download them to keep them."
    )


def draw_search(browser: Browser, text: str) -> None:
    """Which features fire on a text: the strongest over the text, and the features at every token."""
    view = browser.view
    config = view.model.config
    ids, note = inside.tokens_of(
        view.tokenizer, config, inside.bounded_text(text, "search text"), config.context_length
    )
    if not ids:
        return
    if note:
        st.caption(note)
    found = _feature_search(view.content_key, browser.sae_id, tuple(ids), view.model, browser.sae, browser.hook)
    labels = browser.labels()
    strongest = ", ".join(
        f"**{f}**{' (' + literal_markdown(labels[f]) + ')' if f in labels else ''} {v:.2f}"
        for f, v in found.overall[:8]
    )
    st.markdown(f"Strongest on this text: {strongest or 'none fires'}")
    frame = pd.DataFrame(
        {
            "token": [label(view, i) for i in ids],
            "features (activation)": [" ".join(f"{f}:{v:.2f}" for f, v in row) for row in found.per_token],
        }
    )
    st.dataframe(frame, hide_index=True, width="stretch", height=min(300, 36 + 35 * len(frame)))


def draw_feature_steer(browser: Browser, feature: int, prompt: str, alpha: float, seed: int) -> None:
    view = browser.view
    ids = view_ids(view, prompt, "prompt") or view.tokenizer.encode("\n")[:1]
    pair = _feature_steer(
        view.content_key, browser.sae_id, tuple(ids), feature, alpha, seed, view.model, browser.sae, browser.hook
    )
    plain_and_steered(view, prompt, pair, f"With α = {alpha:g} × feature {feature}'s direction at {browser.hook}")
    st.caption(
        f"The feature's decoder row (unit length) times α is added at every position while the model writes "
        f"{inside.NEW_TOKENS} tokens at temperature {inside.STEER_TEMPERATURE:g}; both texts use the same seed "
        f"({seed}, the sidebar's): where they differ, the feature did it."
    )


@st.cache_data(show_spinner=False, max_entries=64)
def _knockout_default(key: str, sae_id: str, ids: tuple, _model, _sae, hook: str) -> int:
    return inside.knockout_default(_model, _sae, hook, list(ids))


def knockout_default(browser: Browser) -> int:
    """The feature the knock-out opens on: the strongest one on the default text (the same for everyone)."""
    view = browser.view
    ids = view_ids(view, inside.DEFAULT_LOSS_TEXT, "text")
    return _knockout_default(view.content_key, browser.sae_id, tuple(ids), view.model, browser.sae, browser.hook)


def draw_feature_knockout(browser: Browser, text: str, knocked: list[int], mode: str) -> None:
    view = browser.view
    ids = view_ids(view, inside.bounded_text(text, "text"), "text")
    interventions.check_text(view.model, ids)
    result = _feature_knockout(
        view.content_key, browser.sae_id, tuple(ids), tuple(knocked), mode, view.model, browser.sae, browser.hook
    )
    before, after = float(result.before.mean()), float(result.after.mean())
    charts.latex(
        rf"\mathcal{{L}}_{{\text{{features {', '.join(map(str, result.features))} out}}}} - \mathcal{{L}} = "
        rf"{after:.4f} - {before:.4f} = {after - before:+.4f}\ \text{{nats}}"
    )
    tokens = [label(view, i) for i in ids]
    named = [str(f) for f in result.features]
    charts.show(
        change_figure(result.change.tolist(), tokens),
        key=state.widget("feature_knock_tokens"),
        words=inside.change_words(
            result.change.tolist(),
            charts.unique_labels(tokens[1:]),
            f"feature{'s' if len(named) > 1 else ''} {words.listed(named)}",
        ),
    )
    st.caption(
        "The loss on every next token without the features, minus with them: red, it got harder to predict. "
        + (
            "Subtract: x − Σ fᵢ·W_dec,ᵢ (the rest of the activation, the autoencoder's error included, stays)."
            if mode == "subtract"
            else "Reconstruction: x̂ with the features set to 0, against x̂ with every feature."
        )
    )


# ------------------------------------------------------------------ features: train your own autoencoder
def submit_sae_run(view, config: sae.SaeConfig):
    """Start an autoencoder run for the picked model as a lab run of this session (admitted by its footprint)."""
    d_in = sae.input_width(view.model, config)
    model_id = {"name": view.label, "fingerprint": model_fingerprint(view.content_key, view.model)}
    found = features_corpus()
    if found is None:
        return None
    text = inside.readable(view.tokenizer, found[1][: inside.corpus_chars(view.model.config, config)])
    build = functools.partial(inside.build_sae_trainer, view.model, view.tokenizer, text, config, view.label)
    label = runs.unique_label(f"SAE {config.hook} · {config.d_sae} · {config.sparsity}")
    job = runs.start(
        "sae_train",
        lambda: picker.runs().submit_training(
            build=build,
            footprint=footprint.sparse_autoencoder(view.model.config, config, d_in),
            label=label,
            total=config.steps,
            checkpoint=False,
            kind=AUTOENCODER,  # recorded as one from its first row (every page lists only the kinds it can use)
        ),
    )
    if job is not None:
        state.SAE_RUNS.setdefault()[job.id] = {"model": model_id, "shown": False}
    return job


def curves_figure(rows: list[dict]) -> go.Figure:
    """An autoencoder run's curves: variance explained, L0, dead features, and the model's loss with x̂ spliced in."""
    frame = pd.DataFrame(rows)
    figure = make_subplots(
        rows=1, cols=4, subplot_titles=("variance explained", "L0 (features per token)", "dead features", "loss")
    )
    for col, name in enumerate(("variance explained", "L0", "dead"), start=1):
        figure.add_trace(go.Scatter(x=frame["step"], y=frame[name], name=name, showlegend=False), row=1, col=col)
    measured = frame.dropna(subset=["spliced-in loss"]) if "spliced-in loss" in frame else frame.iloc[:0]
    for name, colour in (("clean loss", "#212529"), ("spliced-in loss", "#2f9e44"), ("zeroed loss", "#c92a2a")):
        if len(measured):
            figure.add_trace(
                go.Scatter(x=measured["step"], y=measured[name], name=name, mode="lines+markers", line_color=colour),
                row=1,
                col=4,
            )
    figure.update_layout(height=260, margin=charts.margins(30, 10), legend=dict(orientation="h", y=-0.25))
    return figure


def sae_runs() -> list:
    found = [picker.runs().live(job_id) for job_id in state.SAE_RUNS.setdefault()]
    return [job for job in found if job is not None]


def draw_sae_runs() -> None:
    """This session's autoencoder runs: progress, Pause/Stop, and their curves."""
    for job in sae_runs():
        status = job.status()
        st.markdown(f"**{literal_markdown(job.label)}** · {literal_markdown(status.describe())}")
        runs.controls(job, status, "sae")
        rows = inside.sae_curves(status.metrics)
        if rows:
            charts.show(
                curves_figure(rows), key=state.widget("sae_curves_", job.id), words=inside.sae_curve_words(rows)
            )


def newest_finished_run() -> str | None:
    """A run that has finished since the tab last looked: the browser opens on it (once)."""
    for job_id, info in state.SAE_RUNS.setdefault().items():
        job = picker.runs().live(job_id)
        if job is not None and job.status().done and job.snapshots is not None and not info.get("shown"):
            info["shown"] = True
            return f"run:{job_id}"
    return None


def train_own(view) -> None:
    """Pick a hook point, a dictionary size and a sparsity: the autoencoder trains as a lab run of yours."""
    box = sections.lazy("Train your own autoencoder on this model", "sae_train")
    if box is not None:
        with box, friendly_errors("the autoencoder run"):
            points = hook_points(view.model.config)
            c1, c2, c3 = st.columns(3)
            hook = c1.selectbox("Hook point", list(points), index=0, key=state.widget("sae_hook"))
            size = c2.select_slider("Dictionary size", SAE_SIZES, 512, key=state.widget("sae_size"))
            steps = c3.slider("Steps", 50, 2000, SAE_TRAIN_STEPS, 50, key=state.widget("sae_steps"))
            kind = c1.radio("Sparsity", ("TopK", "L1"), horizontal=True, key=state.widget("sae_sparsity"))
            k = c2.slider("k (features per token)", 1, 64, 16, key=state.widget("sae_k")) if kind == "TopK" else 0
            l1 = c3.number_input("L1 coefficient", 1e-5, 10.0, 1e-2, format="%.5f", key=state.widget("sae_l1"))
            layer, point = points[hook]
            config = sae_config(layer, point, int(size), int(k), float(l1), int(steps))
            st.caption(
                f"{config.tokens:,} activations at {config.hook} gathered from the sidebar's corpus, then "
                f"{config.steps} steps of {config.batch} tokens ({config.sparsity}); the spliced-in loss every "
                f"{config.eval_every} steps. It runs in a lab worker of yours: Pause and Stop below."
            )
            if st.button("Train the autoencoder", type="primary", key=state.widget("sae_train")):
                submit_sae_run(view, config)
            runs.refusal("sae_train")
    if sae_runs():
        runs.live(
            draw_sae_runs,
            active=lambda: any(job.changing for job in sae_runs()),
            name="inside.features.live",
        )
