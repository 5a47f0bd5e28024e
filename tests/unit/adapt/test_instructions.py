"""The shipped instruction and preference sets: built from the Python reference manual that ships with Python, the
files in data/instructions/ are what the script writes, the split by a fixed hash, uploads validated line by line."""

import json
import zlib
from pydoc_data.topics import topics

import pytest

from llmviz.adapt import instructions
from llmviz.errors import UploadError
from tests.support.paths import ROOT

FOLDER = ROOT / "data" / "instructions"


def test_the_shipped_files_are_what_the_script_builds(tmp_path):
    counts = instructions.write_sets(tmp_path)
    for name, rows in counts.items():
        assert (tmp_path / name).read_bytes() == (FOLDER / name).read_bytes(), name
        assert rows >= 20
    assert counts["sft_train.jsonl"] + counts["sft_validation.jsonl"] >= 300
    assert sum(path.stat().st_size for path in FOLDER.iterdir()) < 400_000  # small: a few hundred KB at most


def test_every_answer_is_text_of_the_manual_and_splits_are_disjoint():
    manual = " ".join(" ".join(line.strip() for line in text.split()) for text in topics.values())
    train, held = instructions.load_set("sft", "train"), instructions.load_set("sft", "validation")
    for row in train + held:
        first_words = row["response"].split()[:6]
        assert " ".join(first_words).rstrip(".") in manual, row
    assert not {r["prompt"] for r in train} & {r["prompt"] for r in held}
    assert not {r["response"] for r in train} & {r["response"] for r in held}


def test_validation_is_one_title_in_five_by_crc32():
    assert instructions.in_validation("x") == (zlib.crc32(b"x") % 5 == 0)


def test_preference_pairs_keep_the_answer_as_chosen_and_a_worse_one_as_rejected():
    answers = {r["prompt"]: r["response"] for r in instructions.load_set("sft", "train")}
    rows = [json.loads(line) for line in (FOLDER / "dpo_train.jsonl").read_text().splitlines()]
    kinds = {row["kind"] for row in rows}
    assert kinds == {"off topic", "ramble"}
    for row in rows:
        assert row["chosen"] == answers[row["prompt"]] and row["rejected"] != row["chosen"]
        if row["kind"] == "ramble":
            assert row["rejected"].startswith(row["chosen"]) and len(row["rejected"]) > len(row["chosen"])


def test_the_template_puts_the_end_token_after_the_answer():
    text = instructions.render("Q?", "A.")
    assert text == "<|user|>\nQ?\n<|assistant|>\nA.<|endoftext|>"
    assert text.startswith(instructions.prompt_text("Q?"))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not json\n{}", "Line 1 is not valid JSON"),
        (b'[1]\n{"prompt": "a", "response": "b"}', "Line 1 is not a JSON object"),
        (b'{"prompt": "a", "response": "b"}\n{"prompt": "a", "response": ""}', "Line 2 has no text in 'response'"),
        (b'{"prompt": "a", "response": "b"}\n{"prompt": "a", "response": 3}', "Line 2 has no text in 'response'"),
        (b'{"prompt": "a", "response": "b"}', r"1 example\(s\)"),
        (b"\xff\xfe", "not valid UTF-8"),
        (b"x" * (instructions.MAX_UPLOAD_BYTES + 1), "at most 2,000,000"),
        (b"\n" * (instructions.MAX_LINES + 5), "more than 5,000 lines"),
    ],
)
def test_a_bad_upload_is_one_clear_line(data, message):
    with pytest.raises(UploadError, match=message) as caught:
        instructions.parse_jsonl(data, "sft", "mine.jsonl")
    assert "\n" not in str(caught.value)


def test_a_too_long_field_is_refused_before_use():
    row = json.dumps({"prompt": "a", "response": "b" * (instructions.MAX_FIELD_CHARS + 1)}).encode()
    with pytest.raises(UploadError, match="at most 2,000"):
        instructions.parse_jsonl(row + b"\n" + row, "sft")


def test_a_large_file_is_refused_by_its_size_on_disk(tmp_path):
    big = tmp_path / "big.jsonl"
    with big.open("wb") as handle:
        handle.truncate(instructions.MAX_UPLOAD_BYTES + 1)
    with pytest.raises(UploadError, match="big.jsonl has 2,000,001 bytes"):
        instructions.read_jsonl_file(big, "sft")


def test_a_students_set_is_split_with_both_sides_non_empty(tmp_path):
    rows = [{"prompt": f"q{i}", "chosen": "yes", "rejected": "no"} for i in range(12)]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    train, held, where = instructions.training_sets("dpo", path)
    assert where == "pairs.jsonl" and train and held and len(train) + len(held) == 12
    assert all(instructions.in_validation(r["prompt"]) for r in held) or len(held) == 1


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b'{"prompt": "a", "response": "b"}\n' + b"[" * 200_000 + b"\n", "Line 2 nests its brackets 200,000 deep"),
        (b'{"prompt": "a", "response": {"x": ' * 40 + b"\n", "Line 1 nests its brackets 80 deep"),
        (b'{"prompt": "a", "response": "b"}\n{"prompt": "\\udc80x", "response": "b"}\n', "Line 2: 'prompt' holds a"),
    ],
)
def test_a_deeply_nested_or_lone_surrogate_set_is_one_sentence(data, said):
    """Issue 72 §4: a Tuning set of deeply nested JSON raised RecursionError, lone surrogates UnicodeEncodeError."""
    with pytest.raises(UploadError) as refused:
        instructions.parse_jsonl(data, "sft", "my.jsonl")
    assert str(refused.value).startswith(said) and "\n" not in str(refused.value), str(refused.value)
    str(refused.value).encode("utf-8")  # the sentence itself can be drawn and logged
