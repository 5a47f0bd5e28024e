"""Defects a student found walking through the app: Home, Tokens, Inside the model, Loss & training."""

from llmviz import corpus
from llmviz.device import describe_device
from tests.test_app_pages import run_page


def test_one_cpu_thread_is_singular():
    # before: "CPU (1 threads)"
    assert describe_device("cpu", threads=1) == "CPU (1 thread)"
    assert describe_device("cpu", threads=2) == "CPU (2 threads)"


def test_home_shows_every_corpus_description_whole():
    """Before: the corpora were a dataframe whose description column was cut at the table's edge."""
    at = run_page()
    shown = " ".join(m.value for m in at.markdown).replace("\\", "")
    for entry in corpus.list_corpora():
        assert entry.description in shown, entry.name
        assert entry.licence in shown, entry.name


def test_home_pipeline_arrows_lead_their_box():
    """Before: the last box of every row carried an arrow that pointed into the empty space after it."""
    import ui

    at = run_page()
    diagram = next(m.value for m in at.markdown if "stage 0" in m.value)
    boxes = diagram.split('min-width:104px')[1:]
    assert len(boxes) == len(ui.PIPELINE)
    assert "→" not in boxes[0]  # the first box has no arrow into it
    assert all(box.index("→") < box.index("stage ") for box in boxes[1:])  # each arrow comes before its box
    assert "→" not in boxes[-1].split("stage ", 1)[1]  # nothing points past the last box


def test_backprop_check_counts_both_gradients():
    """Before: "all 131,072 entries of ∂L/∂W and ∂L/∂z" counted ∂L/∂W alone (V·C); with ∂L/∂z (V) it is V·C + V."""
    import torch

    from llmviz.losses import output_layer_gradient

    vocab, width = 7, 4
    grad = output_layer_gradient(torch.randn(width), torch.randn(vocab, width), target=2)
    assert grad.entries_compared == vocab * width + vocab  # 28 + 7, counted by hand


def test_training_page_states_the_backprop_count_of_the_shipped_head():
    from ui import models

    at = run_page("pages/training.py")
    head = models.shipped_gpt_or_stop()[0].lm_head.weight  # (V, C)
    vocab, width = head.shape
    text = next(s.value for s in at.success if "By hand vs autograd" in s.value)
    assert f"all {vocab * width + vocab:,} entries" in text, text
    assert f"∂L/∂W ({vocab * width:,})" in text and f"∂L/∂z ({vocab:,})" in text, text
