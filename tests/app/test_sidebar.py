"""The shared sidebar under AppTest: corpora and uploads, the model picker (runs told apart, hostile or broken
checkpoint folders, MiniLM, checkpoints written by the CLI), the step slider and the run seed."""

import re
from pathlib import Path

import pytest
import torch

from llmviz.adapt import finetune
from llmviz.cli import main
from llmviz.data import corpus
from llmviz.training.checkpoint import save_checkpoint
from llmviz.training.config import TrainConfig
from llmviz.training.safetensors_file import read_safetensors
from llmviz.training.trainer import Trainer
from tests.support.checkpoints import bounded, craft, good_checkpoint, hostile_runs_folder
from tests.support.gpt2 import make_hf_gpt2
from tests.support.pages import assert_clean, run_app, run_page, texts
from tests.support.paths import ROOT
from ui.labels import run_label


def test_sidebar_undownloaded_corpus_warns_not_crashes():
    at = run_page(corpus="tinyshakespeare")
    assert_clean(at)
    assert at.warning, "an undownloaded corpus gives a clear message"


def test_sidebar_upload_choice_without_file():
    at = run_page(corpus="upload")
    assert_clean(at)
    assert at.info


def shown(elements) -> str:
    """What the browser shows of Markdown elements (their source escapes punctuation)."""
    return re.sub(r"\\(.)", r"\1", texts(elements))


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


def test_two_runs_of_the_same_model_are_told_apart_and_inside_names_the_model(fresh_session_jobs):
    """Also #27.12: "Download a run" offers the run picked in the sidebar first."""
    from llmviz.jobs.default import default_manager

    at = run_app("stages/training.py", corpus="names")
    at.selectbox(key="train_model").set_value("mlp")
    at.radio(key="train_tokenizer").set_value("char")
    at.slider(key="steps").set_value(20)
    at.button(key="train").click().run()
    at.button(key="train").click().run()  # the same settings again
    assert_clean(at)
    jobs = default_manager().jobs(at.session_state["_llmviz_session_id"])
    assert len(jobs) == 2 and all(job.wait(timeout=120) for job in jobs)
    at.run()
    download = next(box for box in at.selectbox if box.label == "Download a run")
    assert download.value == jobs[1].label, (download.value, jobs[1].label)  # #27.12: the picked run, not the first
    at.switch_page(str(ROOT / "stages/inside.py")).run()
    assert_clean(at)
    picker_box = next(box for box in at.sidebar.selectbox if box.label == "Model shown on every page")
    runs = [option for option in picker_box.options if option.startswith("Run ")]
    assert len(runs) == 2, picker_box.options
    # what a narrow sidebar shows of each tells them apart: the run's number, then its start (an option fits the box:
    # the whole label, with the corpus, is under the picker)
    assert runs[0].startswith("Run 1 · ") and runs[1].startswith("Run 2 · "), runs
    whole = [run_label(job.label, job.created, number) for number, job in enumerate(jobs, start=1)]
    assert all("US census first names" in label for label in whole)
    assert whole[1] in shown(at.sidebar.caption)  # the whole label under the picker (the box and the list cut it)
    caption = shown(at.caption)
    assert f"Model: {whole[1]} · step 20 (picked in the sidebar)" in caption, caption  # Inside names the model


TEXT = corpus.load("python-docs")[:20_000]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt2") / "tiny-gpt2"
    make_hf_gpt2(vocab_size=50257, n_layer=2, n_embd=32, n_head=2, n_positions=64, seed=3).save_pretrained(folder)
    return folder


def test_cli_verbs_on_gpt2_and_the_shipped_gpt_write_checkpoints_the_picker_lists(
    folder, tmp_path, monkeypatch, capsys
):
    text = tmp_path / "text.txt"
    text.write_text(TEXT)
    runs = tmp_path / "runs"
    shipped = str(ROOT / "data" / "gpt-python-docs")
    for init, tag in ((str(folder), "gpt2"), (shipped, "shipped")):
        for argv in (
            ["lora", "--steps", "2", "--rank", "2", "--corpus", str(text)],
            ["finetune", "--steps", "2", "--mode", "last block"],
            ["quantize", "--bits", "4", "--corpus", str(text)],
        ):
            assert main.main([*argv, "--init", init, "--out", str(runs / f"{tag}-{argv[0]}")]) == 0, capsys.readouterr()
    capsys.readouterr()

    from ui.model_sources import RunsDirSource

    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(runs))
    source = RunsDirSource()
    listed = {item.name: item for item in source.listing()}
    assert set(listed) == {f"{tag}-{verb}" for tag in ("gpt2", "shipped") for verb in ("lora", "finetune", "quantize")}
    assert all(item.readable for item in listed.values()), {n: i.problem for n, i in listed.items()}
    for entry in source.entries():
        view = source.load(entry.key, None)
        assert view.family == "gpt" and type(view.model).__name__ == "GPT"
    classifier, tokenizer, task = finetune.load_classifier(runs / "gpt2-finetune")
    assert finetune.accuracy(classifier, tokenizer, finetune.name_examples()[1]) == task["accuracy_after"]


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return good_checkpoint(tmp_path_factory.mktemp("good"))


@pytest.fixture()
def hostile_runs(good, tmp_path):
    return hostile_runs_folder(good, tmp_path)


BAD = ["deep", "fifo", "null.safetensors", "pipe-meta", "zero-meta", "zero-weights"]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero and FIFOs (POSIX)")
def test_pages_work_with_a_hostile_runs_folder_and_picking_a_bad_entry_explains(hostile_runs, monkeypatch):
    from tests.support.pages import assert_clean, run_page

    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(hostile_runs))
    at = run_page("stages/sampling.py", _picker_selected="dir:fine")  # the good run next to the bad ones works
    assert_clean(at)
    at = run_page("stages/attention.py", _picker_selected="dir:deep")  # a link or an old pick of a bad entry
    assert_clean(at)
    picker = next(box for box in at.selectbox if box.label == "Model shown on every page")
    options = " | ".join(picker.options)
    # each bad entry is listed as unavailable, in an option that fits the sidebar (they were all cut off): why it is
    # unavailable is its note, which picking it shows (the link or old pick of "deep" above did)
    from ui.labels import PICKER_WIDTH, text_width
    from ui.model_sources import RunsDirSource

    notes = {entry.label: entry.note for entry in RunsDirSource().entries()}
    for name in BAD:
        assert notes[f"Checkpoint {name}"].startswith("unreadable: "), notes
        option = next(o for o in picker.options if o.startswith(f"Checkpoint {name}"[:24]))
        assert text_width(option) <= PICKER_WIDTH and ("(unavailable)" in option or option.endswith("…")), option
    assert picker.value == "shipped:gpt-python-docs" and str(hostile_runs) not in options
    picker.set_value("dir:deep").run()  # picking it says why not
    assert_clean(at)
    assert "Checkpoint deep is not available here: unreadable: checkpoint.json is nested too deeply" in texts(
        at.sidebar.info
    )


def test_a_folder_whose_name_is_not_utf8_is_listed_as_unreadable_and_the_others_stay(good, tmp_path, monkeypatch):
    """A name of bytes that are not UTF-8 (Python keeps them as lone surrogates, which no page or link can encode)
    took the whole runs folder out of the picker (UnicodeEncodeError in the source's entries), and the weights'
    error printed the server's path."""
    import os

    from llmviz.training.checkpoint import list_checkpoints

    runs = tmp_path / "runs"
    runs.mkdir()
    craft(good, runs, "fine", lambda meta: None)
    bad = craft(good, runs, os.fsdecode(b"caf\xe9-latin1"), lambda meta: None)
    listed = {item.name: item for item in list_checkpoints(runs)}
    assert listed["fine"].readable
    assert listed["caf\ufffd-latin1"].problem == "its name is not valid UTF-8: rename it."
    assert str(runs) not in str(bounded(lambda: read_safetensors(bad / "model.safetensors")))

    from ui.model_sources import RunsDirSource

    monkeypatch.setenv("LLMVIZ_RUNS_DIR", str(runs))
    entries = {entry.label: entry for entry in RunsDirSource().entries()}
    assert entries["Checkpoint fine"].available
    assert not entries["Checkpoint caf\ufffd-latin1"].available
    from tests.support.pages import assert_clean, run_page

    at = run_page("stages/sampling.py", _picker_selected="dir:fine")
    assert_clean(at)
    picker = next(box for box in at.selectbox if box.label == "Model shown on every page")
    assert "Checkpoint fine" in " | ".join(picker.options)


def test_a_bug_in_the_sidebars_step_slider_is_a_message_not_a_traceback(monkeypatch, caplog):
    """The step slider is a section of its own that reruns by itself while a run trains: an exception there was
    shown as Streamlit's raw traceback in the sidebar."""
    import re

    import ui.picker_sidebar
    from tests.support.pages import session_jobs, train_on_names

    at = train_on_names()
    [job] = session_jobs(at)
    assert job.wait(120)

    def broken(*_args):
        raise RuntimeError("a bug in the slider")

    monkeypatch.setattr(ui.picker_sidebar, "_step_slider", broken)
    at.run()
    assert not at.exception
    shown = [re.sub(r"\\(.)", r"\1", e.value) for e in at.sidebar.error]  # Markdown source: punctuation is escaped
    assert shown == ["Something went wrong in the step slider: RuntimeError: a bug in the slider"]
    assert "a bug in the slider" in caplog.text  # the traceback is in the server's log


def test_run_seed_follows_the_deterministic_switch():
    from ui.shared_sidebar import Settings

    on = Settings(corpus="names", seed=42, deterministic=True, device="cpu")
    off = Settings(corpus="names", seed=42, deterministic=False, device="cpu")
    assert on.run_seed() == on.run_seed() == 42
    assert len({off.run_seed() for _ in range(5)}) > 1


def test_a_text_uploaded_before_is_offered_back_to_its_student_only():
    """After a reload (a new session of the same student) the text they uploaded is one choice away in the sidebar,
    its name escaped where Markdown renders it; another student is offered nothing of it."""
    import secrets

    from llmviz.lab.identity import student_key
    from llmviz.lab.service import default_lab
    from llmviz.lab.storage import content_hash

    student, other = (f"kept-text-{secrets.token_hex(6)}" for _ in range(2))
    text = "roses and tulips grow here\n" * 30
    default_lab().keep_upload(student_key(student), "my_garden.txt", text.encode())
    at = run_app("stages/tokens.py", corpus="upload", _llmviz_student_id=student)
    assert_clean(at)
    offered = at.sidebar.selectbox(key=next(k for k in at.session_state if "kept_text" in str(k)))
    assert offered.label == "Or a text you uploaded before" and offered.value is None
    offered.set_value(content_hash(text.encode())).run()
    assert_clean(at)
    assert at.session_state["uploaded_corpus"] == ("my_garden.txt", text)
    assert r"Using **my\_garden\.txt**: 810 characters." in texts(at.sidebar.caption)
    stranger = run_app("stages/tokens.py", corpus="upload", _llmviz_student_id=other)
    assert not [box for box in stranger.sidebar.selectbox if box.label == "Or a text you uploaded before"]
