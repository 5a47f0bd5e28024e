"""Home: the pipeline a language model runs, each stage a link to its page; the device and the corpus."""

import streamlit as st

from llmviz.data import corpus
from llmviz.device import describe_device
from llmviz.lessons.model import DEFAULT_SENTENCE
from llmviz.tokenizers.ids import encode
from ui import joining, picker, present, sections, shared_sidebar, state, streamlit_private
from ui.panels import flow
from ui.stages import PIPELINE, ROOT, Stage
from ui.text import literal_markdown
from ui.widgets import page_header

settings = shared_sidebar.settings()

BOXES_PER_ROW = 5
# a stage's box is its link: the page link's area covers the whole box (a pseudo-element stretched over it), so a
# click anywhere on the box opens the stage, the pointer says so, and hovering lights the box up
PICTURE = ".st-key-" + state.widget("picture_", "home")  # the class Streamlit gives the keyed container
BOX_LINK_STYLE = streamlit_private.linked_boxes_style(PICTURE)


page_header(
    "llmviz — watch a language model work",
    "Real models, small enough to run here: every number is computed by PyTorch in front of you. "
    "Click a stage to open it.",
)
joining.card()  # the teacher's only: the address students open, and its QR code


def stage_box(number: int, stage: Stage) -> None:
    """One stage: its link (the whole box) and what it shows; a stage without a page is grey and says so."""
    with st.container(border=True, height="stretch"):
        st.caption(f"stage {number}")
        if stage.exists:
            st.page_link(
                str(ROOT / stage.path),
                label=stage.title if stage.key != "text" else "Text (this page)",
                icon=stage.icon,
                width="stretch",
            )
        else:
            st.markdown(f":gray[{stage.title} — coming soon]")
        st.caption(stage.blurb)


def pipeline() -> None:
    """The stages in the order the data flows, as boxes joined by arrows, five to a row. Every row has the same
    columns (arrow, box, arrow, box, …) so the boxes line up; an arrow leads the box it points to, so a row after
    the first starts with the arrow that continues the flow, and no arrow points past the last box."""
    st.html(BOX_LINK_STYLE)
    stages = list(enumerate(PIPELINE))
    for start in range(0, len(stages), BOXES_PER_ROW):
        columns = st.columns([0.12, 1] * BOXES_PER_ROW, gap="xsmall", vertical_alignment="center")
        for slot, (number, stage) in enumerate(stages[start : start + BOXES_PER_ROW]):
            arrow, box = columns[2 * slot], columns[2 * slot + 1]
            if number > 0:
                arrow.markdown(":gray[→]")
            with box:
                stage_box(number, stage)


with sections.key_picture("home"):
    pipeline()

st.markdown(
    "A language model turns **text** into **tokens**, tokens into **vectors**, lets the vectors **attend** to each "
    "other through a stack of **transformer blocks**, and is **trained** to make the next token likely; then it "
    "writes by **sampling** one token at a time. Train a model on your own text (Loss & training) and every page "
    "shows it, at any step you pick in the sidebar."
)


@sections.section("home.flow", "the forward pass")
def one_forward_pass() -> None:
    """The Model page's flow, small: one sentence through the shipped GPT (whatever the sidebar picks)."""
    st.subheader("One sentence through the shipped GPT")
    view = picker.load(picker.DEFAULT_KEY)
    flow.draw(view, encode(view.tokenizer, DEFAULT_SENTENCE), key=state.widget("forward_pass_", "home"), compact=True)
    st.caption("The Model page (stage 4) draws it for your own sentence, through the model picked in the sidebar.")


one_forward_pass()

if present.enabled():  # a slide of its own on a projector (the pipeline fills the first)
    st.subheader("Where it runs, and on what text")
left, right = st.columns(2)
with left:
    st.subheader("Device")
    st.metric("Computing on", describe_device(settings.device))
    st.caption("Picked automatically (CUDA, then Apple MPS, then CPU); change it in the sidebar.")
with right:
    st.subheader("Text: the corpus")
    loaded = shared_sidebar.corpus_text()
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
