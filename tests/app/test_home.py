"""The Home page under AppTest: the device, the corpora (every description whole) and the pipeline."""

import ui
from llmviz.data import corpus
from tests.support.pages import assert_clean, run_page


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


def test_home_pipeline_arrows_lead_their_box():
    """Before: the last box of every row carried an arrow that pointed into the empty space after it."""

    at = run_page()
    diagram = next(m.value for m in at.markdown if "stage 0" in m.value)
    boxes = diagram.split("min-width:104px")[1:]
    assert len(boxes) == len(ui.PIPELINE)
    assert "→" not in boxes[0]  # the first box has no arrow into it
    assert all(box.index("→") < box.index("stage ") for box in boxes[1:])  # each arrow comes before its box
    assert "→" not in boxes[-1].split("stage ", 1)[1]  # nothing points past the last box
