"""The Tokens page's figures and tables (stages/tokens.py wires them; llmviz/lessons/tokens.py computes their
numbers): a tokenizer's card of token chips, a BPE's merge table, its compression and Zipf charts, the input–target
windows."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from llmviz.errors import LlmvizError
from llmviz.lessons import forward
from llmviz.lessons.tokens import WORD_VOCAB, split_characters, utf8_bytes
from llmviz.tokenizers import char_word, windows
from llmviz.tokenizers.ids import encode
from ui import charts, sections, share
from ui.text import literal_markdown

MAX_CHIPS = 2_000  # tokens drawn as chips per tokenizer
MAX_IDS = 20_000  # ids listed per tokenizer


def shown_characters(characters: list[str], limit: int = 20) -> str:
    """Characters as a student can read them in Markdown: quoted (a space or a newline stays visible), escaped."""
    return literal_markdown(" ".join(repr(c) for c in characters[:limit])) + (" …" if len(characters) > limit else "")


def unknown_words_note(tokenizer: char_word.WordTokenizer, ids: list[int], text: str, corpus_label: str) -> str:
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


def tokenizer_card(name: str, tokenizer, text: str, corpus_label: str, show_ids: bool, heading: bool = True) -> dict:
    """One tokenizer's card, as Tiktokenizer draws it: its name, how many tokens, your text as chips (the id under
    each), what it lost, the ids; returns its row of the table under the cards. ``heading=False``: its name in bold,
    not a subheading (presenter mode starts a slide at each subheading: the first card stays on its controls' slide)."""
    ids = encode(tokenizer, text)
    unknown = forward.dropped_characters(tokenizer, text)
    notes = (
        f"{len(unknown)} character(s) not in the vocabulary were dropped: {shown_characters(unknown)}"
        if unknown
        else ""
    )
    if isinstance(tokenizer, char_word.WordTokenizer) and 0 in ids:
        notes = unknown_words_note(tokenizer, ids, text, corpus_label)
    shown = ids[:MAX_CHIPS]  # a browser stays quick with a few thousand chips, not a book's worth
    title = literal_markdown(name[:1].upper() + name[1:])
    st.subheader(title) if heading else st.markdown(f"**{title}**")
    vocabulary = f"vocabulary {tokenizer.vocab_size:,}"
    if isinstance(tokenizer, char_word.WordTokenizer):  # its words and [UNK] (the id of every other word)
        vocabulary += f" ({tokenizer.vocab_size - 1:,} words and [UNK], the id of any other word)"
    st.caption(f"**{len(ids):,} tokens** · {len(text):,} characters · {vocabulary}")
    st.markdown(
        charts.token_chips(
            [tokenizer.printable(i) for i in shown],
            shown,
            [f"id {i} · bytes {tokenizer.token_bytes(i)!r}" for i in shown],
            show_ids=show_ids,
        ),
        unsafe_allow_html=True,
    )
    split = split_characters([tokenizer.token_bytes(i) for i in shown], text)
    if split is not None:
        count, first, character = split
        st.caption(
            f"{count} chip(s) such as `{tokenizer.printable(shown[first]).replace('`', '')}` hold bytes of a "
            f"character, not a whole one: UTF-8 writes a character outside ASCII in 2 to 4 bytes (`{character}` is "
            f"`{utf8_bytes(character)}`), and this tokenizer works on bytes, so it may cut a character between "
            "tokens. Joined, they decode to it."
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


def comparison_table(rows: list[dict]):
    """The cards' rows as one table, characters per token to two decimals."""
    return pd.DataFrame(rows).style.format({"characters per token": "{:.2f}", "tokens": "{:,}"})


def merge_table(bpe) -> pd.DataFrame:
    """A BPE's merges, counted from 1 as in the replay: merge n makes token 255 + n."""
    return pd.DataFrame(
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
    )


def compression_figure(curve: list[tuple[int, float]]) -> go.Figure:
    """Characters per token as the vocabulary grows, merge by merge."""
    figure = go.Figure(go.Scatter(x=[v for v, _ in curve], y=[c for _, c in curve], mode="lines+markers"))
    figure.update_layout(
        xaxis_title="vocabulary size", yaxis_title="characters per token", height=320, margin=charts.margins(10)
    )
    return figure


def zipf_figure(counts: list[int], fit) -> go.Figure:
    """Token counts by rank on log–log axes, with the fitted line when there is one."""
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
    return figure


def pairs_table(inputs, targets, tokenizer, shown: int = 12) -> pd.DataFrame:
    """The first ``shown`` input–target windows: their ids, the input's text and the token it should predict."""
    shown = min(len(inputs), shown)
    return pd.DataFrame(
        {
            "input ids": [str(r) for r in inputs[:shown].tolist()],
            "target ids": [str(r) for r in targets[:shown].tolist()],
            "input text": [tokenizer.decode(r) for r in inputs[:shown].tolist()],
            "next token": [tokenizer.printable(r[-1]) for r in targets[:shown].tolist()],
        }
    )


def word_vocabulary_label(tokenizer: char_word.WordTokenizer) -> str:
    words = tokenizer.vocab_size - 1  # [UNK] is not a word of the corpus
    return f"its {words:,} most common words" if tokenizer.vocab_size >= WORD_VOCAB else f"all {words:,} of its words"


def special_tokens_note(specials: dict[str, int]) -> str:
    """What a tokenizer's special tokens are (Markdown), or that it has none."""
    if specials:
        return (
            "Special tokens are single ids that no ordinary text can produce: "
            + ", ".join(f"`{name}` → **{token_id}**" for name, token_id in specials.items())
            + ". They mark boundaries, such as the end of one document and the start of the next."
        )
    return (
        "This tokenizer has no special tokens: every id stands for a piece of text. Byte-level tokenizers such "
        "as GPT-2's add single ids that no ordinary text can produce, such as `<|endoftext|>`, to mark "
        "boundaries between documents."
    )


# ------------------------------------------------------------------ round trip and special tokens, input–target pairs
def round_trip(tokenizer, text: str, which: str) -> None:
    """Section 3: ``text`` encoded and decoded again by ``tokenizer`` (``which`` names it: "your BPE"), and what the
    special tokens are."""
    st.caption(f"With {which}.")
    allow_special = st.toggle(
        "Read special-token text such as <|endoftext|> as the special token",
        value=False,
        **share.bind("allow_special"),
        help="Off (the default): text a user types stays ordinary text, even if it spells a special "
        "token. On: the program that builds the text asks for the special token on purpose.",
    )
    ids = encode(tokenizer, text, "all" if allow_special else "none")
    dropped = forward.dropped_characters(tokenizer, text)
    typed = [name for name in getattr(tokenizer, "special_tokens", {}) if name in text]
    if typed:
        other = encode(tokenizer, text, "none" if allow_special else "all")
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
    st.markdown(special_tokens_note(getattr(tokenizer, "special_tokens", {})))


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
        frame = pairs_table(inputs, targets, tokenizer)
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
