"""Issue #27, page level: defects a student and a teacher met in the live lab, each with a test that failed
before its fix (AppTest runs each section's first run inside the page run; reruns of a section alone are
checked in the browser)."""

import re

import pytest
import torch
from streamlit.testing.v1 import AppTest

import ui
from llmviz.training.checkpoint import save_checkpoint
from llmviz.training.trainer import TrainConfig, Trainer
from tests.test_app_pages import TIMEOUT, assert_clean


def run_app(path: str, query: dict | None = None, **state) -> AppTest:
    at = AppTest.from_file(str(ui.ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    at.switch_page(str(ui.ROOT / path)).run()
    return at


def texts(elements) -> str:
    return " ".join(str(e.value) for e in elements)


def shown(elements) -> str:
    """What the browser shows of Markdown elements (their source escapes punctuation)."""
    return re.sub(r"\\(.)", r"\1", texts(elements))


# ------------------------------------------------------------------ #27.2: every section's errors are friendly


@pytest.mark.parametrize("how", ["sidebar", "link"])
def test_sampling_with_minilm_picked_shows_the_shipped_gpt_everywhere(how):
    """The page swaps the encoder for the shipped GPT; step 0 vs N used to pick MiniLM again (TypeError)."""
    from llmviz.models.minilm import PretrainedUnavailable, model_folder

    try:
        model_folder()
    except PretrainedUnavailable:
        pytest.skip("the MiniLM wheel is not installed")
    if how == "sidebar":
        at = run_app("stages/sampling.py", _picker_selected="pretrained:minilm", lazy_sampling_before_after=True)
    else:  # /sampling?model=pretrained:minilm
        at = run_app("stages/sampling.py", query={"model": "pretrained:minilm"}, lazy_sampling_before_after=True)
    assert at.session_state["_picker_selected"] == "pretrained:minilm"
    assert_clean(at)
    assert "is an encoder" in texts(at.info)
    assert "Shipped GPT" in texts(at.markdown)  # the step N column names the model the page shows


@pytest.fixture(scope="module")
def nan_runs(tmp_path_factory):
    """A runs folder with one checkpoint whose weights are all NaN."""
    folder = tmp_path_factory.mktemp("runs")
    config = TrainConfig(model="gpt-nano", tokenizer="char", context_length=16, batch_size=4, steps=1)
    trainer = Trainer.from_text("The cat sat on the mat. " * 40, config)
    with torch.no_grad():
        for parameter in trainer.model.parameters():
            parameter.fill_(float("nan"))
    save_checkpoint(folder / "broken", trainer, trainer_state=False)
    return folder


@pytest.mark.parametrize("path", ["stages/sampling.py", "stages/embeddings.py"])
def test_a_checkpoint_with_nan_weights_gives_messages_not_tracebacks(nan_runs, monkeypatch, path):
    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(nan_runs))
    at = run_app(path, _picker_selected="dir:broken")
    assert_clean(at, errors_expected=True)
    assert "NaN" in texts(at.error), texts(at.error)
    assert at.title  # the page is there, the sections after the broken one too


# ------------------------------------------------------------------ #27.1 and #27.8: the Tokens page's choices


def test_the_picked_models_tokenizer_stays_selected_when_the_pick_changes():
    """The option was labelled with the model (and a run's step): a new pick or step dropped it from the selection."""
    at = run_app("stages/tokens.py")
    tokenizers = at.multiselect(key="tokenizers")
    tokenizers.set_value(["picked", "gpt2"]).run()
    assert "Shipped GPT" in texts(at.subheader)
    picker_box = next(box for box in at.selectbox if box.key and box.key.startswith("picker_model_"))
    picker_box.set_value("shipped:names-transformer").run()
    assert_clean(at)
    assert at.multiselect(key="tokenizers").value == ["picked", "gpt2"]
    assert "names-transformer" in shown(at.subheader)  # the heading says which model it is now
    assert at.multiselect(key="tokenizers").options == [  # labels that never change with the pick or the corpus
        "characters of the corpus",
        "words of the corpus",
        "the model picked in the sidebar",
        "GPT-2 (50,257)",
        "cl100k / GPT-4 (100,277)",
    ]


def test_an_uploaded_files_name_is_escaped_only_where_markdown_is_rendered():
    name = "my_garden_stories.txt"
    at = run_app("stages/tokens.py", corpus="upload", uploaded_corpus=(name, "roses and tulips grow here\n" * 30))
    assert_clean(at)
    at.multiselect(key="tokenizers").set_value(["characters", "words"]).run()
    table = next(d.value for d in at.dataframe if "tokenizer" in d.value.columns)
    assert list(table["tokenizer"])[0] == f"characters of {name}"
    assert list(table["tokenizer"])[1].startswith(f"words of {name} (all ")
    assert r"my\_garden\_stories\.txt" in texts(at.subheader)  # Markdown: escaped, so it shows as typed
    assert all("\\" not in value for value in at.query_params.get("tokenizers", []))  # nor in the link
    assert "\\" not in "".join(at.multiselect(key="tokenizers").options)


# ------------------------------------------------------------------ #27.7: runs told apart


def test_two_runs_of_the_same_model_are_told_apart_and_inside_names_the_model(fresh_session_jobs):
    """Also #27.12: "Download a run" offers the run picked in the sidebar first."""
    from llmviz.jobs.manager import default_manager

    at = run_app("stages/training.py", corpus="names")
    at.selectbox(key="train_model").set_value("mlp")
    at.radio(key="keep_tokenizer").set_value("char")
    at.slider(key="steps").set_value(20)
    at.button(key="train").click().run()
    at.button(key="train").click().run()  # the same settings again
    assert_clean(at)
    jobs = default_manager().jobs(at.session_state["_llmviz_session_id"])
    assert len(jobs) == 2 and all(job.wait(timeout=120) for job in jobs)
    at.run()
    download = next(box for box in at.selectbox if box.label == "Download a run")
    assert download.value == jobs[1].label, (download.value, jobs[1].label)  # #27.12: the picked run, not the first
    at.switch_page(str(ui.ROOT / "stages/inside.py")).run()
    assert_clean(at)
    picker_box = next(box for box in at.sidebar.selectbox if box.label == "Model shown on every page")
    runs = [option for option in picker_box.options if "US census first names" in option]
    assert len(runs) == 2, picker_box.options
    # what a narrow sidebar shows of each (about 40 characters) tells them apart: the run's number, then its start
    assert runs[0].startswith("Run 1 · ") and runs[1].startswith("Run 2 · "), runs
    assert all("US census first names" in option for option in runs)
    assert runs[1] in shown(at.sidebar.caption)  # the whole label under the picker (the box and the list cut it)
    caption = shown(at.caption)
    assert f"Model: {runs[1]} · step 20 (picked in the sidebar)" in caption, caption  # Inside names the model


# ------------------------------------------------------------------ #27.11: the Model page opens on GPT-2's own count


def transformers_gpt2_parameters(tied: bool) -> int:
    """GPT-2 small's parameter count from Hugging Face's own GPT2LMHeadModel (built on the meta device: no memory)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12, tie_word_embeddings=tied)
    with torch.device("meta"):
        model = GPT2LMHeadModel(config)
    return sum(p.numel() for p in model.parameters())  # a tied matrix is one parameter, counted once


def test_model_page_opens_gpt2_small_with_its_own_tying_and_shows_the_untied_count():
    tied, untied = transformers_gpt2_parameters(True), transformers_gpt2_parameters(False)
    assert tied == 124_439_808  # what README and OpenAI's checkpoint say
    at = run_app("stages/model.py", preset="gpt2-124m")  # the page opens on the picked model: GPT-2 small chosen
    assert_clean(at)
    total = next(m.value for m in at.metric if m.label == "Total parameters")
    assert total == f"{tied:,}"
    assert f"Untied, the same sizes have {untied:,} parameters" in shown(at.caption)


# ------------------------------------------------------------------ #27.12: top-k, downloads, step 0 vs N, CSV


def test_top_k_goes_up_to_the_vocabulary_and_no_further():
    at = run_app("stages/sampling.py")
    assert_clean(at)
    from llmviz.training.checkpoint import load_checkpoint

    _, tokenizer, _ = load_checkpoint(ui.ROOT / "data" / "gpt-python-docs")
    slider = at.slider(key="top_k")
    assert slider.max == tokenizer.vocab_size, (slider.max, tokenizer.vocab_size)  # was vocabulary + 10


def test_attention_step_0_vs_n_follows_the_layer_and_head_above_it(fresh_session_jobs):
    """(Step 0 vs step N is offered only where the picked model has steps: a run, here GPT mini's first steps.)"""
    from llmviz.jobs.manager import default_manager

    at = run_app("stages/training.py", corpus="names")
    at.selectbox(key="train_model").set_value("gpt-mini")  # 4 layers, 4 heads
    at.slider(key="steps").set_value(20)
    at.button(key="train").click().run()
    [job] = default_manager().jobs(at.session_state["_llmviz_session_id"])
    assert job.wait(timeout=180), job.status().describe()
    at.session_state["lazy_attention_before_after"] = True  # the comparison, opened
    at.switch_page(str(ui.ROOT / "stages/attention.py")).run()
    at.slider(key="layer").set_value(2).run()
    at.slider(key="head").set_value(3).run()
    assert_clean(at)
    assert not [s for s in at.slider if s.key in ("ba_layer", "ba_head")]  # no second pair of sliders
    import json

    titles = [json.loads(chart.proto.spec)["layout"].get("title", {}).get("text") for chart in at.get("plotly_chart")]
    # the head above, and step 0 and step N beside each other show the same head
    assert titles.count("layer 2, head 3") == 3, titles


def test_tables_and_csv_hold_the_numbers_the_page_shows():
    import numpy as np
    import pandas as pd

    from ui.text import csv_text, shortest_number, tidy_floats

    float32 = np.array([0.43, 0.15, 0.89, 1e-8, 123456.7], dtype=np.float32)
    assert [shortest_number(float(x)) for x in float32] == ["0.43", "0.15", "0.89", "0.00000001", "123456.7"]
    assert all(np.float32(float(shortest_number(float(x)))) == x for x in float32)  # nothing is lost
    assert shortest_number(0.1 + 0.2) == repr(0.1 + 0.2)  # a float64 keeps all its digits
    frame = pd.DataFrame({"step": [1, 2], "train_loss": [float(np.float32(0.43)), float("nan")]})
    assert csv_text(frame) == "step,train_loss\n1,0.43\n2,\n"
    assert "0.4300000071525574" in frame.to_csv(index=False)  # what the download wrote before
    at = run_app("stages/attention.py")
    journey = at.dataframe[0].value  # "Your journey starts with one step": the first row is 0.43, 0.15, 0.89
    assert journey.iloc[0].tolist() == [0.43, 0.15, 0.89]
    assert "0.43," in journey.to_csv() and "0000" not in journey.to_csv()
    assert tidy_floats(pd.DataFrame({"x": float32}))["x"].tolist() == [0.43, 0.15, 0.89, 1e-8, 123456.7]


# ------------------------------------------------------------------ #27.10: the app speaks in its own words

POINTERS = re.compile(
    r"chapter|\bch\. ?\d|textbook|lecture|\bseed 0\d|bertviz|\bthe book\b|from scratch|write-up|"
    r"worked version|as \w+ draws it|homework",
    re.IGNORECASE,
)


def shown_strings(path):
    """Every string literal of a source file (f-string parts included) that can reach a page: docstrings are not shown,
    nor are web addresses (a corpus's source names the file it comes from)."""
    import ast

    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if "github.com/" not in node.value and "://" not in node.value:
                yield node.lineno, node.value


def test_pages_point_to_no_material_students_never_saw():
    """No "chapter 3" of a book, no "the textbook's arithmetic slips", no "as BertViz draws it": say what is shown."""
    sources = [
        *sorted((ui.ROOT / "stages").glob("*.py")),
        *sorted((ui.ROOT / "ui").rglob("*.py")),
        *sorted((ui.ROOT / "llmviz").rglob("*.py")),
        ui.ROOT / "app.py",
    ]
    found = [
        f"{path.relative_to(ui.ROOT)}:{line}: {text[:80]!r}"
        for path in sources
        for line, text in shown_strings(path)
        if POINTERS.search(text)
    ]
    assert not found, "\n".join(found)
    from llmviz.data import corpus

    for entry in corpus.list_corpora():  # what the Home page's table and the sidebar show of each corpus
        assert not POINTERS.search(f"{entry.title} {entry.description}"), entry


def _page_with_a_broken_section():
    import streamlit as st

    from ui import sections
    from ui.panels import quiz as quiz_ui

    @sections.section("demo.broken")
    def broken() -> None:
        st.write("drawn before the error")
        raise TypeError("'tokenizers.Encoding' object is not iterable")

    st.session_state["quiz_open_demo"] = True
    quiz_ui.section("demo", lambda: [][1])  # a question builder that fails
    broken()
    st.write("the rest of the page")


def test_a_section_that_fails_shows_a_message_and_the_page_goes_on():
    at = AppTest.from_function(_page_with_a_broken_section, default_timeout=TIMEOUT).run()
    assert not at.exception, [e.value for e in at.exception]  # no traceback reaches the student
    errors = shown(at.error)
    assert "Something went wrong in this section: TypeError" in errors, errors
    assert "Something went wrong in the questions: IndexError" in errors, errors
    assert "the rest of the page" in texts(at.markdown)


def test_training_the_induction_run_again_keeps_both_runs_apart(fresh_session_jobs):
    """'Train it again' on Inside the model gave the new run the same label as the first: the Training page keys
    its runs by label, so the first run vanished from its chart, table and 'Download a run'."""
    from llmviz.jobs.manager import default_manager

    at = run_app("stages/inside.py")
    at.button(key="induction_start").click().run()
    manager, owner = default_manager(), at.session_state["_llmviz_session_id"]
    for _ in range(2):
        for job in manager.jobs(owner):
            job.stop()
            assert job.wait(timeout=120)
        at.run()
        if len(manager.jobs(owner)) == 1:
            at.button(key="induction_again").click().run()
    labels = [job.label for job in manager.jobs(owner)]
    assert len(labels) == 2 and len(set(labels)) == 2, labels
    at.switch_page(str(ui.ROOT / "stages/training.py")).run()
    assert_clean(at)
    download = next(box for box in at.selectbox if box.label == "Download a run")
    assert sorted(download.options) == sorted(labels), (download.options, labels)
