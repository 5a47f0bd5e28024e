"""Issue #13, page level: each defect a student met, with a test that failed before its fix.

AppTest drives the pages headless; the browser file (test_browser_fixes_pages.py) covers what
needs a real browser (the file uploader, the Stop buttons).
"""

import json
import re
import time

import pytest

import ui
from llmviz.data import corpus
from llmviz.tokenizers.char_word import WordTokenizer
from tests.test_app_pages import finish_jobs, run_page


def by_label(widgets, label):
    matches = [w for w in widgets if w.label == label]
    assert matches, f"no widget labelled {label!r}: {[w.label for w in widgets]}"
    return matches[0]


def texts(elements) -> str:
    return " ".join(str(e.value) for e in elements)


def assert_no_error_box(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def charts(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


# ------------------------------------------------------------------ #13.3: BPE after a Stop


def test_bpe_trained_after_a_stopped_run_uses_its_own_settings():
    """A stopped gpt2/4000 run must not lend its settings to the next gpt4/300 run."""
    from llmviz.jobs.manager import default_manager

    at = run_page("stages/tokens.py", corpus="python-docs")
    by_label(at.slider, "Vocabulary size").set_value(4000)
    by_label(at.selectbox, "Pre-split pattern").set_value("gpt2")
    at.button(key="train_bpe").click().run()
    [job] = default_manager().jobs(at.session_state["_llmviz_session_id"])
    deadline = time.monotonic() + 120
    while job.status().step < 1:  # merging has begun
        assert time.monotonic() < deadline and not job.status().done, job.status().describe()
        time.sleep(0.05)
    job.stop()  # the Stop button's action (the button lives in a live section, which AppTest does not rerun)
    finish_jobs(at)
    assert_no_error_box(at)
    assert job.status().state == "stopped"
    assert re.search(r"Stopped with \d+ merges \(vocabulary \d+ of the 4000 asked for\)", texts(at.warning))
    assert at.session_state["bpe_tokenizer"].split_pattern == "gpt2"
    by_label(at.slider, "Vocabulary size").set_value(300)
    by_label(at.selectbox, "Pre-split pattern").set_value("gpt4")
    finish_jobs(at.button(key="train_bpe").click().run())
    assert_no_error_box(at)
    assert "Learned 43 merges: a vocabulary of 300." in texts(at.success)
    assert "Stopped" not in texts(at.warning)
    assert at.session_state["bpe_tokenizer"].split_pattern == "gpt4"
    # the finished run leaves neither a Stop button nor a full progress bar behind
    assert not [b for b in at.button if b.label == "Stop"]
    assert "gpt4" in texts(at.caption) or "GPT-4 regex" in texts(at.caption)


def test_your_bpe_names_its_corpus_and_is_flagged_after_a_corpus_change():
    at = run_page("stages/tokens.py", corpus="names")
    by_label(at.slider, "Vocabulary size").set_value(270)
    finish_jobs(at.button(key="train_bpe").click().run())
    assert_no_error_box(at)
    assert "your BPE" in by_label(at.multiselect, "Tokenizers").options
    at.multiselect(key="tokenizers").set_value(["bpe"]).run()
    headings = re.sub(r"\\(.)", r"\1", texts(at.subheader))  # the Markdown source escapes punctuation
    assert "trained on US census first names" in headings, headings
    at.selectbox(key="corpus").set_value("python-docs").run()
    assert_no_error_box(at)
    assert "was trained on US census first names" in texts(at.info)


def test_merges_count_from_one_in_the_table_and_the_replay():
    at = run_page("stages/tokens.py", corpus="names")
    by_label(at.slider, "Vocabulary size").set_value(270)
    finish_jobs(at.button(key="train_bpe").click().run())
    table = next(d.value for d in at.dataframe if "merge" in d.value.columns)
    assert table["merge"].iloc[0] == 1
    by_label(at.slider, "Merges applied").set_value(1).run()
    caption = next(c.value for c in at.caption if c.value.startswith("Merge "))
    shown = re.sub(r"\\(.)", r"\1", caption)  # the Markdown source escapes punctuation; the browser shows it plain
    first = table.iloc[0]
    assert shown.startswith(f"Merge 1: {first['part A']!r} + {first['part B']!r}")


def test_zipf_caption_reports_the_fit():
    at = run_page("stages/tokens.py", corpus="names")
    by_label(at.slider, "Vocabulary size").set_value(300)
    finish_jobs(at.button(key="train_bpe").click().run())
    caption = next(c.value for c in at.caption if "log–log" in c.value)
    assert "R² =" in caption
    r2 = float(re.search(r"R² = ([0-9.]+)", caption).group(1))
    # the verdict follows the number, never a fixed claim
    assert ("close to a straight line" in caption) == (r2 >= 0.95)


# ------------------------------------------------------------------ word vocabulary


def test_word_vocabulary_label_tells_its_real_size_and_spaces_are_not_words():
    at = run_page("stages/tokens.py")  # python-docs: fewer distinct words than the 5,000 asked for
    words = next(re.sub(r"\\(.)", r"\1", h.value) for h in at.subheader if h.value.startswith("Words of"))
    expected = WordTokenizer.train(corpus.load("python-docs"), max_vocab=5000).vocab_size - 1  # [UNK] is no word
    assert "5,000" not in words and f"all {expected:,} of its words" in words, words
    at = run_page("stages/tokens.py", corpus="names")
    by_label(at.multiselect, "Tokenizers").set_value(["words"])
    by_label(at.text_area, "Your text").set_value("emma olivia").run()
    assert_no_error_box(at)
    warning = texts(at.warning)
    assert "1 run(s) of spaces" in warning
    assert "word(s) are outside" not in warning  # both names are in the names vocabulary


def test_token_ids_show_under_the_chips_with_a_toggle():
    at = run_page("stages/tokens.py")
    by_label(at.text_area, "Your text").set_value("hello world").run()
    html = texts(at.markdown)
    assert "font-size:0.7rem" in html  # the id line under each chip
    by_label(at.toggle, "Show the ids under the tokens").set_value(False).run()
    assert "font-size:0.7rem" not in texts(at.markdown)


# ------------------------------------------------------------------ #13.4: embeddings, small d_model


@pytest.mark.parametrize("d_model", [2, 4, 6, 8, 10, 12])
def test_embeddings_small_d_model_keeps_the_page(d_model):
    at = run_page("stages/embeddings.py", embeddings_tab="Positions")  # the lesson's tab under the map
    by_label(at.slider, "d_model").set_value(d_model).run()
    assert_no_error_box(at)
    assert by_label(at.multiselect, "Dimensions").value == [d for d in (0, 1, 4, 10) if d < d_model]
    assert any("Token + position" in s.value for s in at.subheader), "the page goes on after the positions chart"


def test_latex_writes_negative_numbers_in_parentheses():
    at = run_page("stages/embeddings.py")
    by_label(at.text_input, "v₁").set_value("1, -2, 0.5")
    by_label(at.text_input, "v₂").set_value("0.5, -2, 1").run()
    assert_no_error_box(at)
    latex = texts(at.latex)
    assert "(-2)^2" in latex
    assert "((-2) - (-2))^2" in latex
    assert "+ -" not in latex and "- -" not in latex


# ------------------------------------------------------------------ attention


def test_padding_panel_labels_the_pad_token():
    at = run_page("stages/attention.py", attention_tab="Masks")  # the lesson's tab under your sentence
    # the four masks are one figure of four panels: their subplot titles are its annotations, in panel order
    masks = next(
        c for c in charts(at) if any("padding" in a.get("text", "") for a in c["layout"].get("annotations", []))
    )
    titles = [a["text"] for a in masks["layout"]["annotations"]]
    heat = masks["data"][next(i for i, title in enumerate(titles) if title.startswith("padding"))]
    assert heat["x"][-1] == "[PAD]" and heat["y"][-1] == "[PAD]"
    assert "sat" not in heat["x"]


def test_gpt_heatmap_shows_every_token_label():
    at = run_page("stages/attention.py")
    heat = next(c for c in charts(at) if "layer 0, head 0" in json.dumps(c["layout"].get("title", "")))
    assert heat["layout"]["xaxis"]["dtick"] == 1 and heat["layout"]["yaxis"]["dtick"] == 1


# ------------------------------------------------------------------ sampling


def test_entropy_of_a_certain_token_is_not_negative_zero():
    at = run_page("stages/sampling.py")
    by_label(at.slider, "Temperature").set_value(0.0)
    by_label(at.slider, "Top-k").set_value(1).run()
    assert_no_error_box(at)
    values = [m.value for m in at.metric if m.label == "entropy"]
    assert "0.000 nats" in values and not any(v.startswith("-") for v in values), values


def test_step_mode_offers_the_raw_top_10_marked_when_filtered():
    at = run_page("stages/sampling.py")
    by_label(at.slider, "Top-k").set_value(2).run()
    assert_no_error_box(at)
    table = next(d.value for d in at.dataframe if "raw probability" in d.value.columns)
    assert len(table) == 10
    assert (table["raw probability"] > 1e-6).all(), "no zero-probability padding"
    assert list(table["can be sampled"]).count("yes") == 2
    forced = by_label(at.selectbox, "…or force one of the top 10")
    assert list(forced.options)[-1].endswith("· filtered out")


def test_kv_cache_section_generates_the_same_tokens_both_ways():
    at = run_page("stages/sampling.py")
    at.slider(key="kv_tokens").set_value(20)
    at.button(key="kv_run").click().run()
    assert_no_error_box(at)
    assert "Identical: all 20 tokens" in texts(at.success)
    labels = [m.label for m in at.metric]
    assert "with the KV cache" in labels and "without it" in labels


def test_beam_search_tree_marks_the_winning_path():
    at = run_page("stages/sampling.py")
    by_label(at.radio, "Method").set_value("beam search").run()
    by_label(at.slider, "Tokens to generate").set_value(4)
    at.button[[b.label for b in at.button].index("Generate")].click().run()
    assert_no_error_box(at)
    tree = next(c for c in charts(at) if any(t.get("name") == "winning path" for t in c["data"]))
    winners = next(t for t in tree["data"] if t.get("name") == "winning path")
    assert len(winners["x"]) == 4 and winners["x"] == [1, 2, 3, 4]


# ------------------------------------------------------------------ model


def test_model_custom_layers_start_at_one_and_heads_reach_every_suggestion():
    at = run_page("stages/model.py")
    by_label(at.selectbox, "Preset").set_value("custom").run()
    assert by_label(at.slider, "Layers").min == 1
    assert by_label(at.slider, "Heads").max == 64
    by_label(at.slider, "Heads").set_value(48).run()
    error = texts(at.error)
    suggested = [int(n) for n in re.search(r"Try n_heads in \[([\d, ]+)\]", error).group(1).split(",")]
    assert max(suggested) <= by_label(at.slider, "Heads").max


# ------------------------------------------------------------------ what a student reads


STUDENT_FACING = sorted([*(ui.ROOT / "stages").glob("*.py"), *(ui.ROOT / "ui").rglob("*.py"), ui.ROOT / "app.py"])
PROJECT_WORDS = re.compile(r"seed[ -]?0\d\d|seed's|lecture \d+|\bseeds?/", re.IGNORECASE)


@pytest.mark.parametrize("path", STUDENT_FACING, ids=lambda p: p.name)
def test_no_page_names_the_project_source_documents(path):
    found = [line.strip() for line in path.read_text().splitlines() if PROJECT_WORDS.search(line)]
    assert not found, found


@pytest.mark.parametrize("stage", [s for s in ui.PIPELINE if s.exists], ids=lambda s: s.key)
def test_rendered_pages_never_say_seed_or_lecture(stage):
    at = run_page(stage.path)
    assert_no_error_box(at)
    shown = " ".join(
        texts(getattr(at, kind))
        for kind in ("markdown", "caption", "info", "warning", "success", "header", "subheader", "latex", "title")
    )
    assert not PROJECT_WORDS.search(shown), PROJECT_WORDS.search(shown)


# ------------------------------------------------------------------ training readouts


def test_run_colours_are_told_apart():
    """A 7-runner race needs 7 colours that differ (the old list had two near-identical oranges)."""
    from itertools import combinations

    from ui.panels.runs import COLOURS

    def rgb(colour: str) -> tuple[int, int, int]:
        return tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))

    closest = min(sum((a - b) ** 2 for a, b in zip(rgb(x), rgb(y))) ** 0.5 for x, y in combinations(COLOURS, 2))
    assert closest > 80, closest


def test_progress_line_names_its_perplexity_and_smooths_tokens_per_second():
    from types import SimpleNamespace

    from llmviz.jobs import manager as jobs

    steps = [SimpleNamespace(val_loss=None, perplexity=20.0, tokens_per_s=rate) for rate in [33_000.0] * 19 + [200.0]]
    status = jobs.JobStatus(
        job_id="x",
        label="run",
        kind="train",
        state=jobs.RUNNING,
        step=20,
        total=100,
        losses=((20, 3.0),),
        metrics=tuple(steps),
        samples=(),
        queue_position=None,
        error=None,
        snapshot_steps=(),
        elapsed_s=1.0,
    )
    line = status.describe()
    assert "training perplexity 20.0" in line
    # 20 steps of equal size: 20 / (19 / 33,000 + 1 / 200) tokens per second, not the last step's 200
    expected = 20 / (19 / 33_000 + 1 / 200)
    assert f"{expected:,.0f} tokens/s" in line, line


# ------------------------------------------------------------------ every widget at its extremes


def set_extremes(at, end: str) -> list[str]:
    """Push every enabled slider and bounded number input to its ``end`` ("min"/"max").

    Select-sliders are left alone: AppTest only knows their formatted labels, not their values."""
    moved = []
    for widget in [*at.slider, *at.number_input]:
        if widget.disabled or getattr(widget, end, None) is None:
            continue
        value = getattr(widget, end)
        value = int(value) if isinstance(widget.value, int) else value  # the proto keeps bounds as floats
        widget.set_value((widget.min, widget.max) if isinstance(widget.value, tuple) else value)
        moved.append(f"{widget.label}={value}")
    return moved


PAGES = [s for s in ui.PIPELINE if s.exists]


@pytest.mark.parametrize("end", ["min", "max"])
@pytest.mark.parametrize("stage", PAGES, ids=lambda s: s.key)
def test_every_widget_at_its_extremes_shows_no_error_box(stage, end):
    at = run_page(stage.path)
    assert_no_error_box(at)
    moved = set_extremes(at, end)
    at.run()
    assert not at.exception, ([e.value for e in at.exception], moved)
    assert not at.error, ([e.value for e in at.error], moved)
    if stage.key == "model":  # the custom sizes too
        by_label(at.selectbox, "Preset").set_value("custom").run()
        set_extremes(at, end)
        at.run()
        assert not at.exception
        # the only error a custom size can show is a head count that does not divide the width
        assert all("not divisible" in e.value for e in at.error), [e.value for e in at.error]
