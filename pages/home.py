"""Home: what llmviz teaches, the pipeline as a diagram, the device, and the corpus."""

import pandas as pd
import streamlit as st

import ui
from llmviz import corpus
from llmviz.device import describe_device

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
    boxes.append(
        f'<div style="flex:1;min-width:120px;border:2px solid #4c6ef5;border-radius:10px;'
        f'padding:10px 8px;background:#eef3ff;text-align:center;{muted}">'
        f'<div style="font-size:0.75rem;color:#4c6ef5">stage {number}</div>'
        f'<div style="font-weight:700">{stage.title}</div>'
        f'<div style="font-size:0.8rem;color:#495057">{stage.blurb}</div></div>'
    )
arrow = '<div style="align-self:center;font-size:1.4rem;color:#868e96">→</div>'
st.markdown(
    '<div style="display:flex;gap:6px;align-items:stretch;margin:0.5rem 0 0.75rem 0">'
    + arrow.join(boxes) + "</div>",
    unsafe_allow_html=True,
)

columns = st.columns(len(ui.PIPELINE))
for column, stage in zip(columns, ui.PIPELINE):
    with column:
        if stage.exists:
            st.page_link(str(ui.ROOT / stage.path), label=stage.title if stage.key != "text" else "Text (here)", icon=stage.icon)
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
        st.text_area(f"The first lines of {title}", text[:600], height=150, disabled=True)

st.subheader("Corpora")
rows = []
for entry in corpus.list_corpora():
    rows.append({"name": entry.name, "title": entry.title, "description": entry.description,
                 "source": entry.source, "licence": entry.licence,
                 "offline": "built in" if not entry.downloadable else
                 ("downloaded" if corpus.is_cached(entry.name) else "needs a download")})
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
st.caption(f"Uploads: plain UTF-8 text up to {corpus.MAX_UPLOAD_BYTES // 2**20} MB (sidebar → Corpus → Your own text).")
