"""Home: what llmviz teaches, the pipeline as a diagram, the device, and the corpus."""

import streamlit as st

import ui
from llmviz.data import corpus
from llmviz.device import describe_device
from ui.text import literal_markdown

settings = ui.settings()

ui.page_header(
    "llmviz — watch a language model work",
    "Real models, small enough to run here, built to be read. Every number on these pages is "
    "computed by PyTorch in front of you.",
)

st.markdown(
    "A language model turns **text** into **tokens**, tokens into **vectors**, lets the vectors "
    "**attend** to each other through a stack of **transformer blocks**, and is **trained** to "
    "make the next token likely; then it writes by **sampling** one token at a time. Each page "
    "below is one stage of that pipeline, in the order the data flows. Train a model on your own "
    "text and watch every stage change."
)

boxes = []
for number, stage in enumerate(ui.PIPELINE):
    muted = "" if stage.exists else "opacity:0.45;"
    # the arrow leads the box it points to: a narrow window wraps whole steps, each row after the first starts
    # with the arrow that continues the flow, and no arrow ever points past the last box
    arrow = (
        '<div style="align-self:center;font-size:1.1rem;color:#868e96;padding-right:3px">→</div>' if number > 0 else ""
    )
    boxes.append(
        f'<div style="flex:1 1 0;min-width:104px;display:flex;{muted}">{arrow}'
        f'<div style="flex:1;min-width:0;border:2px solid #4c6ef5;border-radius:10px;padding:6px 4px;'
        f'background:#eef3ff;text-align:center;overflow-wrap:break-word;hyphens:auto">'
        f'<div style="font-size:0.7rem;color:#4c6ef5">stage {number}</div>'
        f'<div style="font-weight:700;font-size:0.92rem;line-height:1.2">{stage.title}</div>'
        f'<div style="font-size:0.74rem;color:#495057;line-height:1.25">{stage.blurb}</div></div></div>'
    )
st.markdown(
    '<div style="display:flex;flex-wrap:wrap;gap:4px;align-items:stretch;margin:0.5rem 0 0.75rem 0">'
    + "".join(boxes)
    + "</div>",
    unsafe_allow_html=True,
)

links = list(ui.PIPELINE)
for start in range(0, len(links), 4):  # four links a row: a label like "Loss & training" is never cut
    for column, stage in zip(st.columns(4), links[start : start + 4]):
        with column:
            if stage.exists:
                st.page_link(
                    str(ui.ROOT / stage.path),
                    label=stage.title if stage.key != "text" else "Text (here)",
                    icon=stage.icon,
                )
            else:
                st.markdown(f"{stage.title}  \n:gray[coming soon]")

left, right = st.columns(2)
with left:
    st.subheader("Device")
    st.metric("Computing on", describe_device(settings.device))
    st.caption("Picked automatically (CUDA, then Apple MPS, then CPU); change it in the sidebar.")
with right:
    st.subheader("Text: the corpus")
    loaded = ui.corpus_text()
    if loaded is not None:
        title, text = loaded
        s = corpus.stats(text)
        a, b, c = st.columns(3)
        a.metric("Characters", f"{s.characters:,}")
        b.metric("Words", f"{s.words:,}")
        c.metric("Distinct characters", f"{s.distinct_characters:,}")
        st.text_area(f"The first lines of {literal_markdown(title)}", text[:600], height=150, disabled=True)

st.subheader("Corpora")
# one paragraph per corpus, so that every description is read whole (a table's cells cut long text)
for entry in corpus.list_corpora():
    offline = (
        "built in" if not entry.downloadable else "downloaded" if corpus.is_cached(entry.name) else "needs a download"
    )
    st.markdown(
        f"**{literal_markdown(entry.title)}** (`{entry.name}`, {offline}): "
        f"{literal_markdown(entry.description)}  \n"
        f":gray[Source: {literal_markdown(entry.source)} · licence: {literal_markdown(entry.licence)}]"
    )
st.caption(f"Uploads: plain UTF-8 text up to {corpus.MAX_UPLOAD_BYTES // 2**20} MB (sidebar → Corpus → Your own text).")
