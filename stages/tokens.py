"""The Tokens page: text → integer ids, with BPE you can train, replay and compare."""

import json

import streamlit as st

import llmviz.lessons.quiz
import llmviz.lessons.tokens
import ui.panels.tokens
from llmviz.data import corpus
from llmviz.errors import LlmvizError
from llmviz.tokenizers import zipf
from llmviz.tokenizers.bpe.tokenizer import BPETokenizer
from llmviz.tokenizers.ids import encode
from ui import charts, lab, picker, present, sections, share, shared_sidebar, state
from ui.errors import friendly_errors
from ui.panels import quiz, task_jobs
from ui.text import literal_markdown
from ui.widgets import page_header

settings = shared_sidebar.settings()
page_header(
    "Tokens: from text to integers",
    "A model reads integers, not letters: a tokenizer cuts text into pieces of a fixed vocabulary, each with an id.",
)

MAX_CHARS = 100_000
EXAMPLES = {  # the first: sentences of the Python manual, the shipped GPT's corpus, whose words it knows whole
    "Python manual": "The return value must be a string object. The result is then bound to the class name.",
    "English": "The quick brown fox jumps over the lazy dog. Tokenization isn't magic!",
    "Code": "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "Numbers": "In 2026, 1234567 × 89 = 109876463; π ≈ 3.14159265.",
    "Emoji": "I love llamas 🦙🦙 and rockets 🚀! 👩‍💻 codes.",
    "Other scripts": "Γεια σου κόσμε. こんにちは世界。Привет, мир! مرحبا بالعالم",
    "Special token": "The end of one document.<|endoftext|>The start of the next.",
}

# presenter mode: the example beside the text, so that the first slide reaches the chips (issue 57 item 9)
example_box, text_box = st.columns([1, 3]) if present.enabled() else (st, st)


def _example_chosen() -> None:
    """The Example box's callback: its text replaces the text box's (an example it does not offer: nothing)."""
    chosen = state.value("example")
    if chosen in EXAMPLES:
        state.set_value("text", EXAMPLES[chosen])


example = example_box.selectbox("Example", list(EXAMPLES), **share.bind("example"), on_change=_example_chosen)
text = text_box.text_area("Your text", EXAMPLES[example], height=90, **share.bind("text"))
share.carried_note("text")
EMPTY_TEXT = (
    "Your text is empty: type or paste something above to see it tokenized here. (Training a BPE and "
    "the input–target pairs below still work.)"
)
if len(text) > MAX_CHARS:
    st.warning(f"That is {len(text):,} characters; this page tokenizes the first {MAX_CHARS:,} so it stays responsive.")
    text = text[:MAX_CHARS]

loaded = shared_sidebar.corpus_text()
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
    return llmviz.lessons.tokens.reference(name)


@st.cache_resource(show_spinner="Building the character and word vocabularies…", max_entries=16)
def corpus_tokenizers(content_key: str, _sample: str):
    """The characters and the words of a corpus sample, cached by the sample's content (``text_key``): shared by
    every session that has the same text, whatever its name."""
    return llmviz.lessons.tokens.corpus_tokenizers(_sample)


@st.cache_data(show_spinner="Measuring your BPE on the corpus…", max_entries=32)
def bpe_measures(bpe_key: str, content_key: str, _bpe, _sample: str):
    """The compression curve and the rank–frequency counts of a BPE on a corpus sample, cached by both contents
    (a BPE's own merges, the sample's text): about a second of the server's time once, not on every run."""
    return llmviz.lessons.tokens.bpe_measures(_bpe, _sample)


def trained_bpe():
    return state.BPE_TOKENIZER.get()


def bpe_origin() -> dict:
    """What the session's BPE was trained on and with (corpus, pattern, vocabulary asked for)."""
    return state.BPE_ORIGIN.get()


# ------------------------------------------------------------------ side by side
def keep_finished_bpe() -> None:
    """A BPE run that has ended with merges (finished, or stopped: what was learned) becomes the session's BPE before
    the page draws anything, so the cards show it at once (a rerun from inside the lesson's tab, once the page had
    been drawn without it, left the next click on the page lost)."""
    spec = state.BPE_JOB.get()
    job = picker.runs().live(spec["id"]) if spec else None
    if spec is None and state.BPE_TOKENIZER.get() is None:  # a reload, another tab, a restarted server
        kept = lab.kept_result("bpe", llmviz.lessons.tokens.bpe_from_kept)  # the newest kept one, once a session
        if kept is not None:
            state.BPE_TOKENIZER.set(kept[0])
            state.BPE_ORIGIN.set(kept[1])
    if job is None or not job.status().done or job.result is None:
        return  # still training, or nothing to keep: the lesson's tab follows it and says so
    state.BPE_JOB.pop()
    state.BPE_TOKENIZER.set(llmviz.lessons.tokens.bpe_from_job(job.result, spec["pattern"]))
    state.BPE_LISTED.pop()  # the new BPE joins section 1's tokenizers
    state.BPE_ORIGIN.set({key: spec.get(key) for key in llmviz.lessons.tokens.BPE_ORIGIN_FIELDS})


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
        + "; ".join(
            part for part in (sample_note(CORPUS_SAMPLE), ui.panels.tokens.word_vocabulary_label(word_tok)) if part
        )
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
    pick_box, ids_box = st.columns([2, 1], vertical_alignment="bottom") if present.enabled() else (st, st)
    chosen = pick_box.multiselect(
        "Tokenizers",
        list(available),
        default=[k for k in available if k != "characters"],
        format_func=OPTION_LABELS.get,
        **share.bind("tokenizers"),
    )
    show_ids = ids_box.toggle("Show the ids under the tokens", value=True, **share.bind("show_ids"))
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
        for number, key in enumerate(chosen):  # the first card stays on the slide of its controls
            with friendly_errors(f"the {available[key][0]} tokenizer"):
                tokenizer = available[key][1] or reference(key)
                card = ui.panels.tokens.tokenizer_card
                rows.append(card(available[key][0], tokenizer, text, corpus_label, show_ids, heading=number > 0))
    for start in range(0, 0 if present.enabled() else len(chosen), 2):
        for column, key in zip(st.columns(2), chosen[start : start + 2]):
            name = available[key][0]
            with column, st.container(border=True), friendly_errors(f"the {name} tokenizer"):
                tokenizer = available[key][1] or reference(key)
                rows.append(ui.panels.tokens.tokenizer_card(name, tokenizer, text, corpus_label, show_ids))
    if rows:
        st.dataframe(
            ui.panels.tokens.comparison_table(rows),
            hide_index=True,
            width="stretch",
        )
        st.caption(
            "Round trip: decode(encode(text)) gives the text back. Byte-level BPE always can; a word "
            "vocabulary cannot once a word is [UNK], nor a character vocabulary for characters it never saw."
        )


side_by_side()
if text:  # the questions are about your text
    quiz.section(
        "tokens",
        lambda: llmviz.lessons.quiz.tokens_questions(
            text, {"GPT-2": reference("gpt2"), "cl100k (GPT-4)": reference("cl100k")}
        ),
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
            **share.bind("bpe_chars"),
        )
        sample = corpus_text[:limit]
        st.caption(f"{literal_markdown(corpus_label)}: training on {len(sample):,} of {len(corpus_text):,} characters.")
        if st.button("Train BPE", type="primary", key=state.widget("train_bpe")):
            # the run trains as a job of this session (a worker process); its own settings travel with it, so an
            # earlier stopped run can never mix its settings into this one
            try:
                task, merges_needed, footprint = llmviz.lessons.tokens.bpe_training(sample, vocab_size, pattern)
                origin = dict(pattern=pattern, vocab_size=vocab_size, corpus=corpus_label, corpus_key=sample_key)
                job = picker.runs().submit_task(
                    task,
                    label=f"BPE tokenizer · {vocab_size:,} tokens · {corpus_label}",
                    total=merges_needed,
                    returns_when_stopped=True,
                    footprint=footprint,
                    keep=llmviz.lessons.tokens.bpe_keeping(origin),  # a reload or a restart gives it back
                )
            except LlmvizError as error:
                st.warning(str(error))
            else:
                state.BPE_JOB.set(dict(id=job.id, **origin))
        ended = task_jobs.follow_task(
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
def replay(bpe: BPETokenizer, text: str) -> None:
    """The replay slider re-draws only this part."""
    upto = st.slider("Merges applied", 0, len(bpe.merges), min(len(bpe.merges), 10))
    chunks = bpe.replay(text, upto)
    flat = [i for chunk in chunks for i in chunk]
    st.markdown(
        charts.token_chips([bpe.printable(i) for i in flat], flat, show_ids=state.value("show_ids", True)),
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


def bpe_views(bpe: BPETokenizer) -> None:
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
    merges = ui.panels.tokens.merge_table(bpe)  # merges count from 1, as in the replay below
    st.dataframe(merges, hide_index=True, width="stretch", height=260)
    st.download_button(
        "Download the tokenizer (JSON)",
        data=json.dumps(bpe.to_dict(), indent=1, ensure_ascii=False),
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
    curve, counts = bpe_measures(llmviz.lessons.tokens.bpe_key(bpe), measure_key, bpe, measure_sample)
    with left:
        with friendly_errors("the compression curve"):
            charts.show(
                ui.panels.tokens.compression_figure(curve), words=llmviz.lessons.tokens.compression_words(curve)
            )
            st.caption(
                "Each merge makes a common pair one token: more vocabulary, fewer tokens per character. Measured "
                f"on {literal_markdown(corpus_label)}{sampled(MEASURE_SAMPLE)}."
            )
    with right:
        fit = zipf.zipf_fit(counts)
        charts.show(
            ui.panels.tokens.zipf_figure(counts, fit),
            words=llmviz.lessons.tokens.zipf_words(counts, fit.slope if fit is not None else None),
        )
        st.caption(
            f"Token frequency by rank on log–log axes, measured on {literal_markdown(corpus_label)}"
            f"{sampled(MEASURE_SAMPLE)}. "
            + (llmviz.lessons.tokens.zipf_verdict(fit) if fit is not None else "Too few distinct tokens to fit a line.")
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
        which = (
            "your BPE"
            if trained_bpe()
            else f"the picked model's tokenizer ({literal_markdown(view.label)})"
            if picked_tokenizer
            else "GPT-2's tokenizer"
        )
        ui.panels.tokens.round_trip(lesson_tokenizer(), text, which)
    else:
        st.warning("Your text is empty: type or paste something above to encode and decode it here.")


def pairs_lesson() -> None:
    st.header("4. Input–target pairs: what the model trains on")
    tokenizer = lesson_tokenizer()
    if text:
        ids = encode(tokenizer, text)
    else:  # the windows need tokens: the corpus's start stands in for the empty text, and the page says so
        window_text = corpus_text[:300] or EXAMPLES["English"]
        source = literal_markdown(corpus_label) if corpus_text else "the English example"
        st.info(f"Your text is empty: these windows cut the first {len(window_text)} characters of {source} instead.")
        ids = encode(tokenizer, window_text)
    ui.panels.tokens.input_target_pairs(ids, tokenizer)


# ------------------------------------------------------------------ the lessons, one click away
LINKED = {"Train your own BPE": ("vocab", "split"), "Input–target pairs": ("context", "stride")}  # link → tab
LESSONS = {"Train your own BPE": bpe_lesson, "Encode and decode": round_trip_lesson, "Input–target pairs": pairs_lesson}
for box, lesson in zip(sections.lazy_tabs(list(LESSONS), share.bind("tokens_tab"), LINKED), LESSONS.values()):
    if box is not None:
        with box:
            lesson()
