"""The Home page under AppTest: the device, the corpora (every description whole) and the pipeline."""

from llmviz.data import corpus
from tests.support.pages import assert_clean, run_page
from ui.stages import PIPELINE


def test_home_shows_device_and_corpus():
    at = run_page()
    assert_clean(at)
    assert "llmviz" in at.title[0].value
    labels = [m.label for m in at.metric]
    assert "Computing on" in labels and "Characters" in labels


def test_home_shows_every_corpus_description_whole():
    """Before: the corpora were a dataframe whose description column was cut at the table's edge."""
    at = run_page()
    shown = " ".join(m.value for m in at.markdown).replace("\\", "")
    for entry in corpus.list_corpora():
        assert entry.description in shown, entry.name
        assert entry.licence in shown, entry.name


def _in_page_order(node) -> list:
    """Every element under an AppTest node, in the order the page draws them."""
    found = []
    for child in getattr(node, "children", {}).values():
        found.append(child)
        found += _in_page_order(child)
    return found


def test_home_pipeline_arrows_lead_their_box():
    """Before: the last box of every row carried an arrow that pointed into the empty space after it. (The boxes are
    now rows of columns, each box a link to its stage; the arrows still lead their box.)"""

    at = run_page()
    flow = [
        "arrow" if element.type == "markdown" and element.value == ":gray[→]" else "box"
        for element in _in_page_order(at.main)
        if (element.type == "markdown" and element.value == ":gray[→]")
        or (element.type == "caption" and element.value.startswith("stage "))
    ]
    assert flow.count("box") == len(PIPELINE)
    assert flow[0] == "box"  # the first box has no arrow into it
    assert all(after == "box" for before, after in zip(flow, flow[1:]) if before == "arrow")  # each arrow leads a box
    assert flow[-1] == "box"  # nothing points past the last box


# ------------------------------------------------------------------ the pipeline's boxes are links


def test_every_stage_box_holds_the_link_to_its_page():
    at = run_page()
    assert_clean(at)
    links = at.get("page_link")
    stages = [stage for stage in PIPELINE if stage.exists]
    assert [link.proto.label for link in links] == ["Text (this page)"] + [stage.title for stage in stages[1:]]
    assert [link.proto.page for link in links] == ["" if s.key == "text" else s.key for s in stages]
    assert [c.value for c in at.caption if c.value.startswith("stage ")] == [f"stage {n}" for n in range(len(stages))]
