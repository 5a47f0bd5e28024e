"""The Tokens page: text → integer ids, with BPE you can train, replay and compare."""

import functools
import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from llmviz.data import corpus
from llmviz.errors import LlmvizError
from llmviz.jobs import tasks as lab_tasks
from llmviz.lessons import forward as views
from llmviz.lessons import quiz
from llmviz.tokenizers import base as tokenizer_base
from llmviz.tokenizers import char_word, windows, zipf
from llmviz.tokenizers.bpe import compression
from llmviz.tokenizers.bpe import reference as bpe_reference
from llmviz.tokenizers.bpe import tokenizer as bpe_tokenizer
from ui import charts, picker, present, sections, share, state
from ui.panels import quiz as quiz_ui
from ui.panels import runs as training
from ui.text import literal_markdown

settings = ui.settings()
ui.page_header(
    "Tokens: from text to integers",
    "A model reads integers, not letters: a tokenizer cuts text into pieces of a fixed vocabulary, each with an id.",
)

MAX_CHARS = 100_000
MAX_CHIPS = 2_000  # tokens drawn as chips per tokenizer
MAX_IDS = 20_000  # ids listed per tokenizer
WORD_VOCAB = 5000  # entries of the word vocabulary, [UNK] included
EXAMPLES = {  # the first: sentences of the Python manual, the shipped GPT's corpus, whose words it knows whole
    "Python manual": "The return value must be a string object. The result is then bound to the class name.",
    "English": "The quick brown fox jumps over the lazy dog. Tokenization isn't magic!",
    "Code": "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "Numbers": "In 2026, 1234567 × 89 = 109876463; π ≈ 3.14159265.",
    "Emoji": "I love llamas 🦙🦙 and rockets 🚀! 👩‍💻 codes.",
    "Other scripts": "Γεια σου κόσμε. こんにちは世界。Привет, мир! مرحبا بالعالم",
    "Special token": "The end of one document.<|endoftext|>The start of the next.",
}

example = st.selectbox(
    "Example",
    list(EXAMPLES),
    **share.bind("example"),
    on_change=lambda: state.set_value("text", EXAMPLES[state.value("example")]),
)
text = st.text_area("Your text", EXAMPLES[example], height=90, **share.bind("text"))
share.carried_note("text")
EMPTY_TEXT = (
    "Your text is empty: type or paste something above to see it tokenized here. (Training a BPE and "
    "the input–target pairs below still work.)"
)
if len(text) > MAX_CHARS:
    st.warning(f"That is {len(text):,} characters; this page tokenizes the first {MAX_CHARS:,} so it stays responsive.")
    text = text[:MAX_CHARS]

loaded = ui.corpus_text()
corpus_label, corpus_text = loaded if loaded else ("(no corpus)", "")
# what this page's script run reads of the corpus: bounded samples, so that a 20 MB upload costs the server half a
# second once (then it is cached by its content), never seconds on every run; training a BPE is a job
CORPUS_SAMPLE = 1_000_000  # its characters and words (the built-in corpora are whole)
MEASURE_SAMPLE = 200_000  # a trained BPE's compression and Zipf charts
corpus_sample, measure_sample = corpus_text[:CORPUS_SAMPLE], corpus_text[:MEASURE_SAMPLE]
sample_key, measure_key = corpus.text_key(corpus_sample), corpus.text_key(measure_sample)


def sample_note(limit: int) -> str:
    """What a view reads of a long corpus ("its first 1,000,000 of 3,000,000 characters"; nothing when it fits)."""
    return f"its first {limit:,} of {len(corpus_text):,} characters" if len(corpus_text) > limit else ""


def sampled(limit: int) -> str:
    """:func:`sample_note` in parentheses after a corpus's name (nothing for a corpus that fits)."""
    return f" ({sample_note(limit)})" if sample_note(limit) else ""


@st.cache_resource(show_spinner=False)
def reference(name: str):
    return bpe_reference.reference_tokenizer(name)


@st.cache_resource(show_spinner="Building the character and word vocabularies…", max_entries=16)
def corpus_tokenizers(content_key: str, _sample: str):
    """The characters and the words of a corpus sample, cached by the sample's content (``text_key``): shared by
    every session that has the same text, whatever its name."""
    return char_word.CharTokenizer.train(_sample or "a"), char_word.WordTokenizer.train(
        _sample or "a", max_vocab=WORD_VOCAB
    )


@st.cache_data(show_spinner="Measuring your BPE on the corpus…", max_entries=32)
def bpe_measures(bpe_key: str, content_key: str, _bpe, _sample: str):
    """The compression curve and the rank–frequency counts of a BPE on a corpus sample, cached by both contents
    (a BPE's own merges, the sample's text): about a second of the server's time once, not on every run."""
    curve = compression.compression_curve(_bpe, _sample)
    return curve, zipf.rank_frequency(_bpe.to_tiktoken().encode(_sample, allowed_special="all"))


def bpe_key(bpe) -> str:
    """The content key of a BPE tokenizer: its merges and special tokens, as its JSON writes them."""
    return corpus.text_key(json.dumps(bpe.to_dict(), sort_keys=True))


def zipf_verdict(fit) -> str:
    """Say what the fitted log–log line shows, from its R² (never claim a straight line that is not there)."""
    shape = (
        "close to a straight line (Zipf's law)"
        if fit.r_squared >= 0.95
        else "roughly a straight line, with clear bends"
        if fit.r_squared >= 0.85
        else "not a straight line: Zipf's law does not describe these tokens well"
    )
    return (
        f"The points are {shape}: a line fitted to log count vs log rank has slope {fit.slope:.2f} and "
        f"R² = {fit.r_squared:.3f} (1 would be a perfect line)."
    )


def trained_bpe():
    return state.BPE_TOKENIZER.get()


def bpe_origin() -> dict:
    """What the session's BPE was trained on and with (corpus, pattern, vocabulary asked for)."""
    return state.BPE_ORIGIN.get()


def shown_characters(characters: list[str], limit: int = 20) -> str:
    """Characters as a student can read them in Markdown: quoted (a space or a newline stays visible), escaped."""
    return literal_markdown(" ".join(repr(c) for c in characters[:limit])) + (" …" if len(characters) > limit else "")


def word_vocabulary_label(tokenizer: char_word.WordTokenizer) -> str:
    words = tokenizer.vocab_size - 1  # [UNK] is not a word of the corpus
    return f"its {words:,} most common words" if tokenizer.vocab_size >= WORD_VOCAB else f"all {words:,} of its words"


# ------------------------------------------------------------------ side by side
def keep_finished_bpe() -> None:
    """A BPE run that has ended with merges (finished, or stopped: what was learned) becomes the session's BPE before
    the page draws anything, so the cards show it at once (a rerun from inside the lesson's tab, once the page had
    been drawn without it, left the next click on the page lost)."""
    spec = state.BPE_JOB.get()
    job = picker.manager().get(picker.session_id(), spec["id"]) if spec else None
    if job is None or not job.status().done or job.result is None:
        return  # still training, or nothing to keep: the lesson's tab follows it and says so
    state.BPE_JOB.pop()
    tokenizer = bpe_tokenizer.BPETokenizer.from_history(
        job.result, spec["pattern"], [tokenizer_base.ENDOFTEXT], keep_history=True
    )
    state.BPE_TOKENIZER.set(tokenizer)
    state.BPE_LISTED.pop()  # the new BPE joins section 1's tokenizers
    state.BPE_ORIGIN.set({key: spec.get(key) for key in ("pattern", "vocab_size", "corpus", "corpus_key")})


keep_finished_bpe()
char_tok, word_tok = corpus_tokenizers(sample_key, corpus_sample)
# The options are stable keys with labels that never change (the browser sends a selection back as its labels, and
# one whose label changed would be dropped): the picked model's tokenizer stays selected when its step, the run or the
# corpus change. What each one is right now (corpus, vocabulary, model, step) is in its heading and in the table.
OPTION_LABELS = {
    "characters": "characters of the corpus",
    "words": "words of the corpus",
    "bpe": "your BPE",
    "picked": "the model picked in the sidebar",
    "gpt2": "GPT-2 (50,257)",
    "cl100k": "cl100k / GPT-4 (100,277)",
}
view = picker.current()
picked_tokenizer = None if view.family == "minilm" else view.tokenizer  # MiniLM cuts WordPiece pieces, not bytes
available: dict[str, tuple[str, object]] = {  # key → (what it is now, tokenizer or None for a reference one)
    "characters": (f"characters of {corpus_label}{sampled(CORPUS_SAMPLE)}", char_tok),
    "words": (
        f"words of {corpus_label} ("
        + "; ".join(part for part in (sample_note(CORPUS_SAMPLE), word_vocabulary_label(word_tok)) if part)
        + ")",
        word_tok,
    ),
}
if trained_bpe() is not None:
    available["bpe"] = (
        f"your BPE ({trained_bpe().vocab_size} tokens, trained on {bpe_origin().get('corpus', '?')})",
        trained_bpe(),
    )
if picked_tokenizer is not None:
    available["picked"] = (f"the tokenizer of {view.label} (picked in the sidebar)", picked_tokenizer)
available["gpt2"] = ("GPT-2 (50,257 tokens)", None)
available["cl100k"] = ("cl100k / GPT-4 (100,277 tokens)", None)
if picked_tokenizer is None:
    st.info(
        f"{literal_markdown(view.label)} splits text into WordPiece pieces (shown on the Embeddings and Attention "
        "pages); here the tokenizers that make integer ids from bytes are compared."
    )


def unknown_words_note(tokenizer: char_word.WordTokenizer, ids: list[int]) -> str:
    """What a word vocabulary lost: words outside it, and runs of whitespace its corpus never had (both [UNK])."""
    unknown = [piece for piece, i in zip(tokenizer.split(text), ids) if i == 0]
    blank = sum(1 for piece in unknown if piece.isspace())
    words = len(unknown) - blank
    return " ".join(
        part
        for part in (
            f"{words} word(s) are outside the vocabulary and became [UNK]: the information is lost." if words else "",
            f"{blank} run(s) of spaces or line breaks never occur in {literal_markdown(corpus_label)} (its vocabulary "
            "has no such whitespace), so they became [UNK] too."
            if blank
            else "",
        )
        if part
    )


def tokenizer_card(name: str, tokenizer, show_ids: bool) -> dict:
    """One tokenizer's card, as Tiktokenizer draws it: its name, how many tokens, your text as chips (the id under
    each), what it lost, the ids; returns its row of the table under the cards."""
    ids = views.encode(tokenizer, text)
    unknown = views.dropped_characters(tokenizer, text)
    notes = (
        f"{len(unknown)} character(s) not in the vocabulary were dropped: {shown_characters(unknown)}"
        if unknown
        else ""
    )
    if isinstance(tokenizer, char_word.WordTokenizer) and 0 in ids:
        notes = unknown_words_note(tokenizer, ids)
    shown = ids[:MAX_CHIPS]  # a browser stays quick with a few thousand chips, not a book's worth
    st.subheader(literal_markdown(name[:1].upper() + name[1:]))
    st.caption(f"**{len(ids):,} tokens** · {len(text):,} characters · vocabulary {tokenizer.vocab_size:,}")
    st.markdown(
        charts.token_chips(
            [tokenizer.printable(i) for i in shown],
            shown,
            [f"id {i} · bytes {tokenizer.token_bytes(i)!r}" for i in shown],
            show_ids=show_ids,
        ),
        unsafe_allow_html=True,
    )
    if len(ids) > MAX_CHIPS:
        st.caption(f"The first {MAX_CHIPS:,} of {len(ids):,} tokens are drawn; the counts below are for all of them.")
    if notes:
        st.warning(notes)
    with st.expander(f"ids ({len(ids):,})"):
        st.code(
            str(ids[:MAX_IDS]) + (f"  … the first {MAX_IDS:,} of {len(ids):,}" if len(ids) > MAX_IDS else ""),
            language=None,
            wrap_lines=True,
        )
    return {
        "tokenizer": name,  # (its vocabulary is on its card)
        "tokens": len(ids),
        "characters per token": len(text) / max(1, len(ids)),
        "round trip exact": tokenizer.decode(ids) == text,
    }


@sections.section("tokens.side_by_side")
def side_by_side() -> None:
    """The key picture: your text as token chips, one card per tokenizer, side by side (stacked on a projector)."""
    st.header("1. Several tokenizers, side by side")
    # every tokenizer but the corpus's characters; a BPE trained here joins the list once (next to GPT-2 and
    # cl100k, replacing neither), and taken off by the student it stays off
    if "bpe" in available and not state.BPE_LISTED.get() and state.has_value("tokenizers"):
        state.set_value("tokenizers", [key for key in state.value("tokenizers") if key != "bpe"] + ["bpe"])
    if "bpe" in available:
        state.BPE_LISTED.set(True)
    chosen = st.multiselect(
        "Tokenizers",
        list(available),
        default=[k for k in available if k != "characters"],
        format_func=OPTION_LABELS.get,
        **share.bind("tokenizers"),
    )
    show_ids = st.toggle("Show the ids under the tokens", value=True, key=state.widget("tok_show_ids"))
    if "bpe" in available and "bpe" not in chosen:
        st.caption("Your BPE is in the list: add it to compare it with the others.")
    if not text:
        st.warning(EMPTY_TEXT)
        return
    with sections.key_picture("tokens"):
        cards(chosen, show_ids)


def cards(chosen: list[str], show_ids: bool) -> None:
    """One card per tokenizer, two to a row (on a projector one after another), and the table that compares them."""
    rows = []
    if present.enabled():  # one after another: each card's heading starts a slide
        for key in chosen:
            with ui.friendly_errors(f"the {available[key][0]} tokenizer"):
                rows.append(tokenizer_card(available[key][0], available[key][1] or reference(key), show_ids))
    for start in range(0, 0 if present.enabled() else len(chosen), 2):
        for column, key in zip(st.columns(2), chosen[start : start + 2]):
            name = available[key][0]
            with column, st.container(border=True), ui.friendly_errors(f"the {name} tokenizer"):
                rows.append(tokenizer_card(name, available[key][1] or reference(key), show_ids))
    if rows:
        st.dataframe(
            pd.DataFrame(rows).style.format({"characters per token": "{:.2f}", "tokens": "{:,}"}),
            hide_index=True,
            width="stretch",
        )
        st.caption(
            "Round trip: decode(encode(text)) gives the text back. Byte-level BPE always can; a word "
            "vocabulary cannot once a word is [UNK], nor a character vocabulary for characters it never saw."
        )


side_by_side()
if text:  # the questions are about your text
    quiz_ui.section(
        "tokens",
        lambda: quiz.tokens_questions(text, {"GPT-2": reference("gpt2"), "cl100k (GPT-4)": reference("cl100k")}),
    )


# ------------------------------------------------------------------ training BPE
def train_bpe_controls() -> None:
    """Section 2's controls: train a BPE on the corpus as a job of this session, and follow it."""
    if not corpus_text:
        st.info("Pick a corpus in the sidebar (or upload one) to train on.")
    else:
        c1, c2, c3 = st.columns(3)
        vocab_size = c1.slider(
            "Vocabulary size",
            257,
            4096,
            512,
            step=1,
            **share.bind("vocab"),
            help="256 byte tokens + 1 special token (<|endoftext|>) + one token per merge.",
        )
        pattern = c2.selectbox(
            "Pre-split pattern",
            ["gpt4", "gpt2", "none"],  # "none", not None: a link cannot carry None (it left the link)
            format_func=lambda p: {"gpt4": "GPT-4 (cl100k) regex", "gpt2": "GPT-2 regex", "none": "none (whole text)"}[
                p
            ],
            **share.bind("split"),
        )
        pattern = None if pattern == "none" else pattern
        limit = c3.select_slider(
            "Train on the first",
            [10_000, 50_000, 200_000, 1_000_000, 5_000_000],
            value=200_000,
            format_func=lambda n: f"{n:,} characters",
        )
        sample = corpus_text[:limit]
        st.caption(f"{literal_markdown(corpus_label)}: training on {len(sample):,} of {len(corpus_text):,} characters.")
        if st.button("Train BPE", type="primary", key=state.widget("train_bpe")):
            # the run trains as a job of this session (a worker process); its own settings travel with it, so an
            # earlier stopped run can never mix its settings into this one
            try:
                merges_needed = bpe_tokenizer.BPETokenizer.merges_for(vocab_size, [tokenizer_base.ENDOFTEXT])
                job = picker.manager().submit_task(
                    picker.session_id(),
                    functools.partial(lab_tasks.bpe_training, text=sample, merges=merges_needed, split_pattern=pattern),
                    label=f"BPE tokenizer · {vocab_size:,} tokens · {corpus_label}",
                    total=merges_needed,
                    returns_when_stopped=True,
                    footprint=lab_tasks.bpe_training_footprint(len(sample)),
                )
            except LlmvizError as error:
                st.warning(str(error))
            else:
                state.BPE_JOB.set(
                    dict(
                        id=job.id,
                        pattern=pattern,
                        vocab_size=vocab_size,
                        corpus=corpus_label,
                        corpus_key=sample_key,
                    )
                )
        ended = training.follow_task(
            state.BPE_JOB,
            name="tokens.bpe_job",
            describe=lambda status: f"merge {status.step} of {status.total}" if status.step else "Counting pairs…",
        )
        if ended is not None:  # ended without a result (one with a result was kept before the page was drawn)
            st.warning(f"The BPE training ended without a result: {ended.status().error or ended.status().describe()}")
        bpe_now, origin = trained_bpe(), bpe_origin()
        if bpe_now is not None and origin.get("vocab_size"):
            learned = len(bpe_now.merges)
            if bpe_now.vocab_size < origin["vocab_size"]:
                st.warning(
                    f"Stopped with {learned} merges (vocabulary {bpe_now.vocab_size} of the {origin['vocab_size']} "
                    "asked for): either you pressed Stop or the text has no pair left to merge."
                )
            else:
                st.success(f"Learned {learned} merges: a vocabulary of {bpe_now.vocab_size}.")


@sections.section("tokens.replay")
def replay(bpe: bpe_tokenizer.BPETokenizer, text: str) -> None:
    """The replay slider re-draws only this part."""
    upto = st.slider("Merges applied", 0, len(bpe.merges), min(len(bpe.merges), 10))
    chunks = bpe.replay(text, upto)
    flat = [i for chunk in chunks for i in chunk]
    st.markdown(
        charts.token_chips(
            [bpe.printable(i) for i in flat], flat, show_ids=state.value(state.widget("tok_show_ids"), True)
        ),
        unsafe_allow_html=True,
    )
    if upto:
        (a, b), new = bpe.merges[upto - 1]
        st.caption(
            f"Merge {upto}: {literal_markdown(repr(bpe.printable(a)))} + {literal_markdown(repr(bpe.printable(b)))} → "
            f"{literal_markdown(repr(bpe.printable(new)))} "
            f"(id {new}, seen {bpe.merge_counts[upto - 1]:,} times in the training text). "
            f"Your text is now {len(flat)} tokens (it was {len(text.encode())} bytes)."
        )


def bpe_views(bpe: bpe_tokenizer.BPETokenizer) -> None:
    """What a trained BPE is: its merge table, a replay of your text merge by merge, compression and Zipf."""
    origin = bpe_origin()
    patterns = {"gpt4": "the GPT-4 regex", "gpt2": "the GPT-2 regex", None: "no pre-split"}
    st.subheader("Merge table")
    st.caption(
        f"Your BPE: {len(bpe.merges)} merges learned from {literal_markdown(origin.get('corpus', '?'))} with "
        f"{patterns.get(origin.get('pattern'), origin.get('pattern'))}."
    )
    if origin.get("corpus_key") not in (None, sample_key):  # by content (the sample): two files may share a name
        trained_on, now = literal_markdown(origin["corpus"]), literal_markdown(corpus_label)
        st.info(
            f"Your BPE was trained on {trained_on}, but the corpus in the sidebar is now {now}: "
            f"the charts below measure it on {now}. Train again to get a BPE of {now}."
        )
    merges = pd.DataFrame(
        [
            {
                "merge": r + 1,
                "part A": bpe.printable(a),
                "part B": bpe.printable(b),
                "new token": bpe.printable(new),
                "new id": new,
                "count": bpe.merge_counts[r],
            }
            for r, ((a, b), new) in enumerate(bpe.merges)
        ]
    )  # merges count from 1, as in the replay below: merge n makes token 255 + n
    st.dataframe(merges, hide_index=True, width="stretch", height=260)
    st.download_button(
        "Download the tokenizer (JSON)",
        data=__import__("json").dumps(bpe.to_dict(), indent=1, ensure_ascii=False),
        file_name="bpe-tokenizer.json",
        mime="application/json",
    )

    st.subheader("Replay: your text, merge by merge")
    if not text:
        st.warning(EMPTY_TEXT)
    elif bpe.merges:
        replay(bpe, text)

    st.subheader("Compression and frequency")
    left, right = st.columns(2)
    curve, counts = bpe_measures(bpe_key(bpe), measure_key, bpe, measure_sample)
    with left:
        with ui.friendly_errors("the compression curve"):
            figure = go.Figure(go.Scatter(x=[v for v, _ in curve], y=[c for _, c in curve], mode="lines+markers"))
            figure.update_layout(
                xaxis_title="vocabulary size", yaxis_title="characters per token", height=320, margin=charts.margins(10)
            )
            charts.show(figure)
            st.caption(
                "Each merge makes a common pair one token: more vocabulary, fewer tokens per character. Measured "
                f"on {literal_markdown(corpus_label)}{sampled(MEASURE_SAMPLE)}."
            )
    with right:
        fit = zipf.zipf_fit(counts)
        figure = go.Figure(go.Scatter(x=list(range(1, len(counts) + 1)), y=counts, mode="markers", name="tokens"))
        if fit is not None:
            figure.add_trace(
                go.Scatter(
                    x=[1, len(counts)],
                    y=[fit.count_at(1), fit.count_at(len(counts))],
                    mode="lines",
                    name=f"fitted line (slope {fit.slope:.2f})",
                    line=dict(dash="dash", color="#868e96"),
                )
            )
        figure.update_layout(
            xaxis=charts.log_axis(len(counts), "rank"),
            yaxis=charts.log_axis(max(counts, default=1), "count"),
            height=320,
            margin=charts.margins(10),
            legend=dict(orientation="h", y=-0.25),
        )
        charts.show(figure)
        st.caption(
            f"Token frequency by rank on log–log axes, measured on {literal_markdown(corpus_label)}"
            f"{sampled(MEASURE_SAMPLE)}. "
            + (zipf_verdict(fit) if fit is not None else "Too few distinct tokens to fit a line.")
        )


# ------------------------------------------------------------------ round trip and special tokens
def round_trip(tokenizer) -> None:
    """Section 3: your text encoded and decoded again, and what the special tokens are."""
    st.caption(
        "With "
        + (
            "your BPE"
            if trained_bpe()
            else f"the picked model's tokenizer ({literal_markdown(view.label)})"
            if picked_tokenizer
            else "GPT-2's tokenizer"
        )
        + "."
    )
    allow_special = st.toggle(
        "Read special-token text such as <|endoftext|> as the special token",
        value=False,
        key=state.widget("tok_allow_special"),
        help="Off (the default): text a user types stays ordinary text, even if it spells a special "
        "token. On: the program that builds the text asks for the special token on purpose.",
    )
    ids = views.encode(tokenizer, text, "all" if allow_special else "none")
    dropped = views.dropped_characters(tokenizer, text)
    typed = [name for name in getattr(tokenizer, "special_tokens", {}) if name in text]
    if typed:
        other = views.encode(tokenizer, text, "none" if allow_special else "all")
        as_special, as_text = (ids, other) if allow_special else (other, ids)
        st.info(
            f"Your text spells {', '.join(f'`{name}`' for name in typed)}. As ordinary text it is "
            f"{len(as_text)} tokens; read as the special token it is {len(as_special)} tokens, with id "
            f"{', '.join(str(tokenizer.special_tokens[name]) for name in typed)} inside. "
            + (
                "The switch is on: the special token is used."
                if allow_special
                else "The switch is off: a student who types it cannot end a document by accident."
            )
        )
    decoded = tokenizer.decode(ids)
    c1, c2 = st.columns(2)
    c1.code(str(ids[:200]) + (" …" if len(ids) > 200 else ""), language=None, wrap_lines=True)
    c2.code(decoded[:2000], language=None, wrap_lines=True)
    if decoded == text:
        st.success(f"decode(encode(text)) == text: all {len(text):,} characters come back.")
    elif dropped:
        st.warning(
            f"{len(dropped)} character(s) of your text are not in this {tokenizer.vocab_size}-character vocabulary "
            f"({shown_characters(dropped)}): encoding drops them, so decoding gives back the text "
            "without them. A byte-level BPE never has this problem: every text is made of bytes."
        )
    else:
        st.error("The round trip changed the text.")
    specials = getattr(tokenizer, "special_tokens", {})
    if specials:
        st.markdown(
            "Special tokens are single ids that no ordinary text can produce: "
            + ", ".join(f"`{name}` → **{token_id}**" for name, token_id in specials.items())
            + ". They mark boundaries, such as the end of one document and the start of the next."
        )
    else:
        st.markdown(
            "This tokenizer has no special tokens: every id stands for a piece of text. Byte-level tokenizers such "
            "as GPT-2's add single ids that no ordinary text can produce, such as `<|endoftext|>`, to mark "
            "boundaries between documents."
        )


@sections.section("tokens.pairs")
def input_target_pairs(ids: list[int], tokenizer) -> None:
    c1, c2 = st.columns(2)
    context_length = c1.slider("Context size", 1, 32, 4, **share.bind("context"))
    stride = c2.slider("Stride", 1, 32, 1, **share.bind("stride"))
    try:
        inputs, targets = windows.sliding_windows(ids, context_length, stride)
    except LlmvizError as error:
        st.warning(str(error))
    else:
        shown = min(len(inputs), 12)
        frame = pd.DataFrame(
            {
                "input ids": [str(r) for r in inputs[:shown].tolist()],
                "target ids": [str(r) for r in targets[:shown].tolist()],
                "input text": [tokenizer.decode(r) for r in inputs[:shown].tolist()],
                "next token": [tokenizer.printable(r[-1]) for r in targets[:shown].tolist()],
            }
        )
        st.dataframe(frame, hide_index=True, width="stretch")
        st.caption(
            f"{len(inputs)} windows of {context_length} tokens, one every {stride}: each target row is its input "
            f"shifted one token to the left, so every position learns to predict the token after it "
            f"({len(inputs) * context_length} predictions in all). "
            + (
                "Windows overlap (stride < context)."
                if stride < context_length
                else ""
                if stride == context_length
                else f"{stride - context_length} token(s) between windows are never inputs."
            )
        )
        charts.latex(
            rf"\text{{windows}} = \left\lfloor \frac{{{len(ids)} - {context_length} - 1}}{{{stride}}} \right\rfloor + "
            rf"1 = {len(inputs)}"
        )


def lesson_tokenizer():
    """The tokenizer the lessons under the cards use: your BPE once trained, else the picked model's, else GPT-2's."""
    return trained_bpe() or picked_tokenizer or reference("gpt2")


def bpe_lesson() -> None:
    st.header("2. Train your own BPE")
    train_bpe_controls()
    bpe = trained_bpe()
    if bpe is not None:
        bpe_views(bpe)


def round_trip_lesson() -> None:
    st.header("3. Encode → decode, and special tokens")
    if text:
        round_trip(lesson_tokenizer())
    else:
        st.warning("Your text is empty: type or paste something above to encode and decode it here.")


def pairs_lesson() -> None:
    st.header("4. Input–target pairs: what the model trains on")
    tokenizer = lesson_tokenizer()
    if text:
        ids = views.encode(tokenizer, text)
    else:  # the windows need tokens: the corpus's start stands in for the empty text, and the page says so
        window_text = corpus_text[:300] or EXAMPLES["English"]
        source = literal_markdown(corpus_label) if corpus_text else "the English example"
        st.info(f"Your text is empty: these windows cut the first {len(window_text)} characters of {source} instead.")
        ids = views.encode(tokenizer, window_text)
    input_target_pairs(ids, tokenizer)


# ------------------------------------------------------------------ the lessons, one click away
LINKED = {"Train your own BPE": ("vocab", "split"), "Input–target pairs": ("context", "stride")}  # link → tab
LESSONS = {"Train your own BPE": bpe_lesson, "Encode and decode": round_trip_lesson, "Input–target pairs": pairs_lesson}
for box, lesson in zip(sections.lazy_tabs(list(LESSONS), share.bind("tokens_tab"), LINKED), LESSONS.values()):
    if box is not None:
        with box:
            lesson()
