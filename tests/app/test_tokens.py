"""The Tokens page under AppTest: empty and huge text, training a BPE as a job (and after a Stop), the merges and
their replay, Zipf, the word vocabulary, token ids, special tokens and the picked model's tokenizer."""

import json
import re
import time
from pydoc_data.topics import topics

import pytest

from llmviz.data import corpus
from llmviz.tokenizers.char_word import WordTokenizer
from llmviz.training.checkpoint import load_checkpoint
from tests.support.pages import JOB_TIMEOUT, assert_clean, by_label, finish_jobs, run_app, run_page, texts
from ui.stages import ROOT

pytestmark = pytest.mark.usefixtures("fresh_session_jobs")


def test_tokens_empty_text_warns():
    at = run_page("stages/tokens.py")
    by_label(at.text_area, "Your text").set_value("").run()
    assert_clean(at)
    assert "empty" in texts(at.warning)


def test_tokens_huge_paste_is_clamped_and_odd_text_works():
    at = run_page("stages/tokens.py")
    by_label(at.text_area, "Your text").set_value(
        "ab\x00\x07 🙂 東京 " * 12_000
    ).run()  # 120,000 characters: past the 100,000 read
    assert_clean(at)
    assert "first 100,000" in texts(at.warning)
    # every tokenizer draws its first 2,000 tokens as chips and says so; the table counts them all
    table = at.dataframe[0].value
    drawn = [caption.value for caption in at.caption if caption.value.startswith("The first 2,000 of")]
    assert drawn == [
        f"The first 2,000 of {count:,} tokens are drawn; the counts below are for all of them."
        for count in table["tokens"]
        if count > 2000
    ]
    assert drawn and all(chips.value.count('title="id ') <= 2000 for chips in at.markdown)


def test_tokens_train_bpe_then_replay_and_short_text():
    at = run_page("stages/tokens.py", corpus="names")
    by_label(at.slider, "Vocabulary size").set_value(257)  # no merges at all: only the special token
    finish_jobs(at.button(key="train_bpe").click().run())
    assert_clean(at)
    by_label(at.slider, "Vocabulary size").set_value(300)
    finish_jobs(at.button(key="train_bpe").click().run())
    assert_clean(at)
    assert "Learned 43 merges" in texts(at.success)
    by_label(at.slider, "Merges applied").set_value(43).run()
    assert_clean(at)
    at.session_state["tokens_tab"] = "Input–target pairs"  # the windows' tab under the chips
    by_label(at.text_area, "Your text").set_value("hi").run()
    by_label(at.slider, "Context size").set_value(32).run()
    assert_clean(at)
    assert "one window needs" in texts(at.warning)


def test_tokens_round_trip_with_a_character_model_picked():
    """A character-level model's tokenizer: characters it lacks are dropped with a warning that says which (not an
    error box, not a traceback), and it claims no special token (before: GPT-2's `<|endoftext|>` → 50256)."""
    at = run_page("stages/tokens.py", _picker_selected="shipped:names-transformer", tokens_tab="Encode and decode")
    assert_clean(at)
    assert any("are not in this" in w.value and "characters come back" not in w.value for w in at.warning)
    shown = " ".join(m.value for m in at.markdown)
    assert "This tokenizer has no special tokens" in shown and "50256" not in shown


def test_dropped_characters_are_shown_as_typed():
    """Characters a vocabulary lacks are quoted and escaped: `$x$` or `*a*` in the text never turns into an equation
    or emphasis in the warning (the raw markdown carries the escapes; Streamlit shows the characters themselves)."""
    at = run_page("stages/tokens.py", _picker_selected="shipped:names-transformer", tokens_tab="Encode and decode")
    at.text_area(key="text").set_value("ab $x$ *c*").run()
    assert_clean(at)
    warnings = [w.value for w in at.warning if "are not in this" in w.value]
    # every punctuation character gets a backslash (Markdown's escape), the quotes around each character too
    assert warnings and r"\'\$\'" in warnings[0] and r"\'\*\'" in warnings[0], warnings


def assert_no_error_box(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_bpe_trained_after_a_stopped_run_uses_its_own_settings():
    """A stopped gpt2/4000 run must not lend its settings to the next gpt4/300 run."""
    from llmviz.jobs.default import default_manager

    at = run_page("stages/tokens.py", corpus="python-docs")
    by_label(at.slider, "Vocabulary size").set_value(4000)
    by_label(at.selectbox, "Pre-split pattern").set_value("gpt2")
    at.button(key="train_bpe").click().run()
    [job] = default_manager().jobs(at.session_state["_llmviz_session_id"])
    deadline = time.monotonic() + JOB_TIMEOUT
    while job.status().step < 1:  # merging has begun
        assert time.monotonic() < deadline and not job.status().done, job.status().describe()
        time.sleep(0.05)
    job.stop()  # the Stop button's action (the button lives in a live section, which AppTest does not rerun)
    finish_jobs(at)
    assert_no_error_box(at)
    assert job.status().state == "stopped", job.status().describe()
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


def shown(elements) -> str:
    """What the browser shows of Markdown elements (their source escapes punctuation)."""
    return re.sub(r"\\(.)", r"\1", texts(elements))


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


def test_tokens_a_trained_bpe_joins_the_list_and_cl100k_stays():
    """Before: with a BPE trained, the default list was the first four (words, your BPE, picked, GPT-2): cl100k
    was silently gone."""
    from tests.support.pages import by_label, finish_jobs

    at = run_page("stages/tokens.py", corpus="names")
    assert set(by_label(at.multiselect, "Tokenizers").value) >= {"gpt2", "cl100k"}
    by_label(at.slider, "Vocabulary size").set_value(300)
    finish_jobs(at.button(key="train_bpe").click().run())
    assert_clean(at)
    assert set(by_label(at.multiselect, "Tokenizers").value) >= {"bpe", "gpt2", "cl100k"}


def test_tokens_empty_text_warns_and_keeps_bpe_training_and_windows():
    """Before: an empty text stopped the page after its warning: no BPE training, no input–target windows."""
    from tests.support.pages import by_label, texts

    at = run_page("stages/tokens.py", corpus="names")
    by_label(at.text_area, "Your text").set_value("").run()
    assert_clean(at)
    assert "Your text is empty" in texts(at.warning)
    headers = [h.value for h in at.header]  # the BPE lesson: the tab open by default
    assert any(h.startswith("2. Train your own BPE") for h in headers)
    assert at.button(key="train_bpe")
    at.session_state["tokens_tab"] = "Input–target pairs"  # the windows' tab
    at.run()
    assert_clean(at)
    headers = [h.value for h in at.header]
    assert any(h.startswith("4.") for h in headers)
    assert "first 300 characters of US census first names" in texts(at.info).replace("\\", "")
    assert at.dataframe, "the input–target windows are drawn"


def jobs_of(at):
    from llmviz.jobs.default import default_manager

    return default_manager().jobs(at.session_state["_llmviz_session_id"])


def test_bpe_training_is_a_job_of_the_session():
    at = run_page("stages/tokens.py")
    by_label(at.slider, "Vocabulary size").set_value(300)
    at.button(key="train_bpe").click().run()
    assert_clean(at)
    [job] = jobs_of(at)
    assert job.kind == "task" and job.total == 300 - 257
    assert job.wait(120) and job.status().state == "finished"
    at.run()
    assert_clean(at)
    assert "Learned 43 merges: a vocabulary of 300." in texts(at.success)


def _widget(widgets, label):
    return next(w for w in widgets if w.label == label)


def test_special_token_switch_shows_the_difference():
    at = run_page("stages/tokens.py", tokens_tab="Encode and decode")  # the lesson's tab under the chips
    _widget(at.selectbox, "Example").set_value("Special token").run()
    assert_clean(at)
    info = " ".join(str(e.value) for e in at.info)
    assert "<|endoftext|>" in info and "switch is off" in info
    switch = _widget(at.toggle, "Read special-token text such as <|endoftext|> as the special token")
    assert switch.value is False
    switch.set_value(True).run()
    assert_clean(at)
    assert "switch is on" in " ".join(str(e.value) for e in at.info)


# ------------------------------------------------------------------ the page opens on your text as token chips


def charts(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def test_the_default_text_is_the_python_manual_read_word_by_word():
    """The shipped GPT was trained on the Python manual: the page opens on sentences of it, each word one token."""
    at = run_page("stages/tokens.py")
    assert_clean(at)
    text = at.text_area(key="text").value
    manual = " ".join(" ".join(topics.values()).split())  # the corpus, its line breaks as spaces
    sentences = re.findall(r"[^.]+\.", text)
    assert len(sentences) == 2 and all(sentence.strip() in manual for sentence in sentences), text
    _, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs")
    words = re.findall(r" ?[A-Za-z]+", text)
    assert all(len(tokenizer.encode(word)) == 1 for word in words), [w for w in words if len(tokenizer.encode(w)) > 1]


def test_the_lessons_are_tabs_under_the_chips_and_only_the_open_one_runs():
    at = run_page("stages/tokens.py")
    assert [tab.label for tab in at.tabs] == ["Train your own BPE", "Encode and decode", "Input–target pairs"]
    headers = [h.value for h in at.header]
    assert headers[0].startswith("1.") and headers[1].startswith("2. Train your own BPE") and len(headers) == 2
    assert not [s for s in at.slider if s.label == "Context size"]  # the pairs' tab is closed: it never ran
    at = run_page("stages/tokens.py", tokens_tab="Input–target pairs")
    assert [h.value[:2] for h in at.header] == ["1.", "4."]
    assert [s for s in at.slider if s.label == "Context size"]


def test_zipf_axes_are_labelled_at_the_powers_of_ten_only():
    """Before: Plotly labelled the log axes "1 2 5 10 2 5 100 2" (the 2s and 5s between the powers of ten)."""
    at = run_page("stages/tokens.py", corpus="names")
    at.slider(key="vocab").set_value(300)
    finish_jobs(at.button(key="train_bpe").click().run())
    assert_clean(at)
    zipf = next(c for c in charts(at) if c["layout"].get("xaxis", {}).get("title", {}).get("text") == "rank")
    ranks = len(zipf["data"][0]["x"])
    for axis, high in (("xaxis", ranks), ("yaxis", max(zipf["data"][0]["y"]))):
        shown = zipf["layout"][axis]
        assert shown["type"] == "log"
        assert shown["tickvals"][:4] == [1, 10, 100, 1000][: len(shown["tickvals"])]
        assert shown["ticktext"] == [f"{10**k:,}" for k in range(len(shown["tickvals"]))]  # 1, 10, 100, 1,000
        assert shown["tickvals"][-1] >= high > shown["tickvals"][-2]  # one power of ten past the data, not more


def test_byte_chips_and_the_word_vocabulary_are_explained():
    """Issue 50 §10: chips such as ``\\xe6`` stood unexplained, and "all 4,277 of its words" sat beside "vocabulary
    4,278". GPT-2's BPE cuts 日 (UTF-8 e6 97 a5) into byte tokens (tiktoken says so): the card says what such a chip
    is; the word tokenizer's vocabulary is its words and [UNK]."""
    from llmviz.tokenizers.bpe.reference import encoding  # tiktoken's Encoding, from its offline files

    text = "naïve 日本"
    gpt2 = encoding("gpt2")
    pieces = [gpt2.decode_single_token_bytes(t) for t in gpt2.encode(text)]
    assert b"\xe6" in b"".join(pieces) and not any("日".encode() in piece for piece in pieces)  # 日 is cut
    at = run_page("stages/tokens.py")
    by_label(at.text_area, "Your text").set_value(text).run()
    assert_clean(at)
    notes = [c.value for c in at.caption if "hold bytes of a character, not a whole one" in c.value]
    assert any("`日` is `\\xe6\\x97\\xa5`" in note for note in notes), notes  # GPT-2's card names the cut 日
    words = WordTokenizer.train(corpus.load("python-docs"), max_vocab=5000).vocab_size
    assert f"vocabulary {words:,} ({words - 1:,} words and [UNK]" in texts(at.caption), texts(at.caption)


def test_a_trained_bpe_comes_back_in_a_new_session_of_its_student_only():
    """A reload (a new session of the same student) gives back the BPE they trained, from the lab's kept file: the
    same merges, and the captions say what it was trained on; another student gets none (issue 56)."""
    import secrets

    from llmviz.jobs.default import default_manager

    student, other = (f"kept-bpe-{secrets.token_hex(6)}" for _ in range(2))
    at = run_app("stages/tokens.py", corpus="names", tokens_tab="Train your own BPE", _llmviz_student_id=student)
    by_label(at.slider, "Vocabulary size").set_value(300)
    finish_jobs(at.button(key="train_bpe").click().run())
    assert "Learned 43 merges" in texts(at.success)
    trained = at.session_state["bpe_tokenizer"]
    default_manager().keeper.flush()  # the keeper's next pass (once a second) writes it
    again = run_app("stages/tokens.py", corpus="names", tokens_tab="Train your own BPE", _llmviz_student_id=student)
    assert_clean(again)
    kept = again.session_state["bpe_tokenizer"]
    assert kept.merges == trained.merges and kept.merge_counts == trained.merge_counts
    assert "Your BPE: 43 merges learned from" in texts(again.caption)
    stranger = run_app("stages/tokens.py", corpus="names", tokens_tab="Train your own BPE", _llmviz_student_id=other)
    assert_clean(stranger)
    assert "bpe_tokenizer" not in stranger.session_state


def test_a_bpe_waiting_behind_a_training_run_says_it_is_queued():
    """Issue 72 §8: a BPE job queued behind the student's training run said "Counting pairs…" until it started."""
    from llmviz.jobs.default import default_manager
    from llmviz.lab.live_status import JobState

    at = run_page("stages/training.py")
    by_label(at.slider, "Steps").set_value(2000)
    at.button(key="train").click().run()
    at.switch_page(str(ROOT / "stages/tokens.py")).run()
    by_label(at.slider, "Vocabulary size").set_value(300)
    at.button(key="train_bpe").click().run()
    assert_clean(at)
    jobs = default_manager().jobs(at.session_state["_llmviz_session_id"])
    try:
        [bpe] = [job for job in jobs if job.kind == "task"]
        assert bpe.status().state == JobState.QUEUED  # behind the run of 2,000 steps, which has just begun
        lines = [bar.proto.text for bar in at.get("progress")]
        assert any(text.startswith("Queued, waiting: it starts when your run in training ends") for text in lines)
        assert not any("Counting pairs" in text for text in lines), lines
    finally:
        for job in jobs:
            job.stop()
        finish_jobs(at)
