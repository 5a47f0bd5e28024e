"""Instruction data: questions about the Python reference manual and their answers, and preference pairs.

Made offline from the text llmviz ships (``pydoc_data.topics``, the Python reference manual's topics): every
section of a topic becomes a question ("What is the `for` statement?") whose answer is the first sentences of that
section. A preference pair keeps the same question and answer as *chosen*, and a worse answer as *rejected*: the
answer to another question (off topic), or a ramble that starts well and runs on into the manual's next paragraph
without ending where an answer should. ``scripts/make_instructions.py`` writes both sets as JSON Lines under
``data/instructions/``; a fixed hash of the section's title puts one in five into validation, so the split never
changes.

The prompt template marks who speaks; the markers ``<|user|>`` and ``<|assistant|>`` are plain text (several
tokens of the shipped GPT's BPE) and the answer ends with the special token ``<|endoftext|>`` (one token, id 4095
in the shipped GPT), which is how the tuned model learns to stop:

>>> print(render("What is the `pass` statement?", "A null operation."))
<|user|>
What is the `pass` statement?
<|assistant|>
A null operation.<|endoftext|>
>>> parse_line('{"prompt": "Hi?", "response": "Hello."}', 1, PAIR_KINDS["sft"])
{'prompt': 'Hi?', 'response': 'Hello.'}
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

from llmviz.errors import UploadError

USER, ASSISTANT, END = "<|user|>", "<|assistant|>", "<|endoftext|>"
ROOT = Path(__file__).resolve().parent.parent.parent
FOLDER = ROOT / "data" / "instructions"
FILES = {("sft", "train"): "sft_train.jsonl", ("sft", "validation"): "sft_validation.jsonl"}
FILES |= {("dpo", "train"): "dpo_train.jsonl", ("dpo", "validation"): "dpo_validation.jsonl"}
PAIR_KINDS = {"sft": ("prompt", "response"), "dpo": ("prompt", "chosen", "rejected")}
MAX_UPLOAD_BYTES = 2_000_000  # a student's JSONL: checked before anything is decoded
MAX_LINES = 5_000
MAX_FIELD_CHARS = 2_000
MAX_DEPTH = 16  # a row is one flat object: deeper nesting is refused before json.loads (it recursed out of the stack)
MAX_ANSWER_CHARS = 220  # answers of the shipped set: a sentence or two, so prompt + answer fit a 128-token context


def prompt_text(prompt: str) -> str:
    """The template up to where the assistant's answer begins (what the model is given at inference).

    >>> prompt_text("Hi?")
    '<|user|>\\nHi?\\n<|assistant|>\\n'
    """
    return f"{USER}\n{prompt}\n{ASSISTANT}\n"


def render(prompt: str, response: str) -> str:
    """The whole example as text: the prompt's template, the answer and the end token."""
    return prompt_text(prompt) + response + END


# ---------------------------------------------------------------------------- the manual's sections


@dataclass(frozen=True)
class Section:
    """A titled part of a manual topic: its title and its paragraphs (each unwrapped to one line)."""

    topic: str
    title: str
    paragraphs: tuple[str, ...]


_UNDERLINE = re.compile(r"^([*=\-~^])\1{2,}$")


def split_sections(topic: str, text: str) -> list[Section]:
    """A topic's sections: a heading is a line underlined by a run of ``*``, ``=``, ``-``, ``~`` or ``^``.

    >>> [s.title for s in split_sections("t", "Top\\n***\\n\\nA b.\\n\\nSub\\n===\\n\\nC d.\\n")]
    ['Top', 'Sub']
    """
    lines = text.splitlines()
    sections: list[tuple[str, list[str]]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if line.strip() and _UNDERLINE.match(following.strip()) and len(following.strip()) >= len(line.strip()) - 2:
            sections.append((line.strip(), []))
            index += 2
            continue
        if sections:
            sections[-1][1].append(line)
        index += 1
    return [Section(topic, title, tuple(paragraphs("\n".join(body)))) for title, body in sections]


def paragraphs(body: str) -> list[str]:
    """The prose paragraphs of a section, each unwrapped to one line; indented blocks (grammar, code) are left out.

    >>> paragraphs("One\\ntwo.\\n\\n   code\\n\\nThree.")
    ['One two.', 'Three.']
    """
    kept = []
    for block in re.split(r"\n\s*\n", body):
        block_lines = [line for line in block.splitlines() if line.strip()]
        if not block_lines or block_lines[0].startswith(" "):
            continue
        kept.append(" ".join(line.strip() for line in block_lines))
    return kept


def first_sentences(paragraph: str, limit: int = MAX_ANSWER_CHARS) -> str:
    """The first sentence of ``paragraph`` and as many more as fit in ``limit`` characters (at least one sentence,
    cut at a word when even that is longer).

    >>> first_sentences("A b. C d. E f.", limit=9)
    'A b. C d.'
    """
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z\"*(])", paragraph.strip())
    answer = sentences[0]
    for sentence in sentences[1:]:
        if len(answer) + 1 + len(sentence) > limit:
            break
        answer += " " + sentence
    if len(answer) > limit:
        answer = answer[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"
    return answer


PHRASINGS = ("What is {}?", "Explain {}.", "Tell me about {}.", "Describe {}.")


def question(title: str, which: int = 0) -> str:
    """The question a section answers, in one of four phrasings: a fixed hash of the title picks the first,
    ``which`` counts on from it.

    >>> question('The "for" statement'), question("Assignment statements", 1)
    ('Tell me about the `for` statement.', 'Tell me about assignment statements.')
    """
    subject = re.sub(r'"([^"]+)"', r"`\1`", title).rstrip(".:")
    if len(subject) > 1 and subject[1].islower():  # "The ..." and "Assignment ...", not "UTF-8" or "Python"
        subject = subject[0].lower() + subject[1:]
    start = zlib.crc32(title.encode("utf-8")) % len(PHRASINGS)
    return PHRASINGS[(start + which) % len(PHRASINGS)].format(subject)


def answer_paragraph(section: Section) -> str | None:
    """The section's first paragraph that answers (not a version note, not a pointer elsewhere), or None."""
    for paragraph in section.paragraphs:
        if len(paragraph) >= 30 and not paragraph.startswith(("New in", "Changed in", "Deprecated", "See ", "Note:")):
            return paragraph
    return None


def finished(answer: str) -> str:
    """An answer ending as a sentence: a closing colon (code followed in the manual) becomes a full stop.

    >>> finished("It is used as follows:"), finished("It ends."), finished("It is cut …")
    ('It is used as follows.', 'It ends.', 'It is cut …')
    """
    answer = answer.removesuffix(":")
    return answer if answer.endswith((".", "!", "?", "…", ")")) else answer + "."


def in_validation(title: str, every: int = 5) -> bool:
    """One section title in ``every`` is held out for validation, by a fixed hash (the same on every machine)."""
    return zlib.crc32(title.encode("utf-8")) % every == 0


def manual_sections() -> list[Section]:
    """Every section of the shipped reference manual that has a prose paragraph, each title once, in order."""
    from pydoc_data.topics import topics

    seen, found = set(), []
    for topic in sorted(topics):
        for section in split_sections(topic, topics[topic]):
            if answer_paragraph(section) and section.title not in seen and len(section.title) <= 80:
                seen.add(section.title)
                found.append(section)
    return found


def build_sets(limit: int = MAX_ANSWER_CHARS) -> dict[tuple[str, str], list[dict]]:
    """The shipped sets: ``{("sft" | "dpo", "train" | "validation"): rows}``.

    A pair's rejected answer is, for two sections in three, the answer to a section of another topic ("off topic");
    for the third, a ramble: the answer run on into the manual's next sentences, cut mid-sentence (what a base model
    does). Each question is asked in two phrasings in the instruction set."""
    sections = manual_sections()
    raw = [first_sentences(str(answer_paragraph(s)), limit) for s in sections]
    answers = [finished(a) for a in raw]
    sets: dict[tuple[str, str], list[dict]] = {key: [] for key in FILES}
    for index, (section, answer) in enumerate(zip(sections, answers, strict=True)):
        split = "validation" if in_validation(section.title) else "train"
        for which in range(2):  # two phrasings of each question, on the same side of the split
            sets[("sft", split)].append({"prompt": question(section.title, which), "response": answer})
        prompt = question(section.title)
        salt = zlib.crc32(section.title.encode("utf-8"))
        text = " ".join(section.paragraphs)
        after = text[text.find(raw[index]) + len(raw[index]) :].strip()
        if salt % 3 == 2 and len(after) > 40 and not raw[index].endswith("…"):
            rejected, kind = (answer + " " + after)[: (3 * limit) // 2].rsplit(" ", 1)[0], "ramble"
        else:
            other = next(
                j
                for j in (((index + 7 + salt % 50 + k) % len(sections)) for k in range(len(sections)))
                if sections[j].topic != section.topic and answers[j] != answer
            )
            rejected, kind = answers[other], "off topic"
        sets[("dpo", split)].append({"prompt": prompt, "chosen": answer, "rejected": rejected, "kind": kind})
    return sets


def write_sets(folder: str | Path = FOLDER) -> dict[str, int]:
    """Write the shipped sets as JSON Lines in ``folder``; returns each file's number of rows."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    counts = {}
    for key, rows in build_sets().items():
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        (folder / FILES[key]).write_text(text, encoding="utf-8")
        counts[FILES[key]] = len(rows)
    return counts


# ---------------------------------------------------------------------------- reading (shipped or uploaded)


def nesting_depth(line: str) -> int:
    """How deep the brackets of a JSON text nest (brackets inside strings do not count), found without parsing it.

    >>> nesting_depth('{"prompt": "[[[", "response": {"a": [1]}}'), nesting_depth("[" * 5000)
    (3, 5000)
    """
    depth = deepest = 0
    quoted = escaped = False
    for char in line:
        if quoted:
            escaped, quoted = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            quoted = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _is_text(value: str) -> bool:
    """Is ``value`` text that UTF-8 can hold (a JSON escape such as ``\\ud800`` makes a lone surrogate, which it
    cannot)?

    >>> _is_text("héllo"), _is_text(json.loads('"\\ud800"'))
    (True, False)
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_line(line: str, number: int, fields: tuple[str, ...]) -> dict:
    """One JSON Lines row with the text ``fields`` (extra keys ignored), or :class:`UploadError` naming the line:
    nesting deeper than :data:`MAX_DEPTH` is refused before it is parsed, a lone surrogate is no text.

    >>> parse_line('{"prompt": ' * 3000, 7, ("prompt",))
    Traceback (most recent call last):
    ...
    llmviz.errors.UploadError: Line 7 nests its brackets 3,000 deep; a row is one flat JSON object (at most 16 deep).
    >>> parse_line('{"prompt": "a\\ud800", "response": "b"}', 2, ("prompt", "response"))
    Traceback (most recent call last):
    ...
    llmviz.errors.UploadError: Line 2: 'prompt' holds a lone surrogate (a \\ud800-\\udfff escape on its own), not text.
    """
    if (depth := nesting_depth(line)) > MAX_DEPTH:
        raise UploadError(
            f"Line {number} nests its brackets {depth:,} deep; a row is one flat JSON object "
            f"(at most {MAX_DEPTH} deep)."
        )
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise UploadError(f"Line {number} is not valid JSON ({error.msg} at column {error.colno}).") from None
    if not isinstance(row, dict):
        raise UploadError(f"Line {number} is not a JSON object: each line needs {', '.join(fields)}.")
    kept = {}
    for name in fields:
        value = row.get(name)
        if not isinstance(value, str) or not value.strip():
            raise UploadError(f"Line {number} has no text in {name!r}: each line needs {', '.join(fields)}.")
        if len(value) > MAX_FIELD_CHARS:
            raise UploadError(f"Line {number}: {name!r} has {len(value):,} characters; at most {MAX_FIELD_CHARS:,}.")
        if not _is_text(value):
            raise UploadError(
                f"Line {number}: {name!r} holds a lone surrogate (a \\ud800-\\udfff escape on its own), not text."
            )
        kept[name] = value
    return kept


def parse_jsonl(data: bytes, kind: str, label: str = "The file") -> list[dict]:
    """Validate a JSON Lines file of ``kind`` ("sft": prompt, response; "dpo": prompt, chosen, rejected): sizes are
    bounded before anything is decoded, and every fault is one line naming where it is.

    >>> parse_jsonl(b'{"prompt": "a", "chosen": "b", "rejected": "c"}\\n' * 2, "dpo")[1]
    {'prompt': 'a', 'chosen': 'b', 'rejected': 'c'}
    >>> parse_jsonl(b'{"prompt": "a"}', "sft")
    Traceback (most recent call last):
    ...
    llmviz.errors.UploadError: Line 1 has no text in 'response': each line needs prompt, response.
    """
    if kind not in PAIR_KINDS:
        raise UploadError(f"The kind of set must be one of {', '.join(PAIR_KINDS)} (got {kind!r}).")
    if len(data) > MAX_UPLOAD_BYTES:
        raise UploadError(f"{label} has {len(data):,} bytes; an instruction set may have at most {MAX_UPLOAD_BYTES:,}.")
    if data.count(b"\n") > MAX_LINES + 1:
        raise UploadError(f"{label} has more than {MAX_LINES:,} lines; keep at most {MAX_LINES:,} examples.")
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        raise UploadError(f"{label} is not valid UTF-8 (byte offset {error.start:,}): save it as UTF-8.") from None
    rows = [parse_line(line, n, PAIR_KINDS[kind]) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if len(rows) < 2:
        raise UploadError(f"{label} has {len(rows)} example(s): give at least 2, one JSON object per line.")
    return rows


def load_set(kind: str, split: str, folder: str | Path = FOLDER) -> list[dict]:
    """A shipped set: ``kind`` "sft" or "dpo", ``split`` "train" or "validation"."""
    if (kind, split) not in FILES:
        raise UploadError(f"No shipped set {kind}/{split}: kinds {', '.join(PAIR_KINDS)}, splits train, validation.")
    path = Path(folder) / FILES[(kind, split)]
    return parse_jsonl(path.read_bytes(), kind, path.name)


def split_rows(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """A student's rows into (train, validation) by a fixed hash of the prompt (about one in five held out; at least
    one on each side)."""
    held = [row for row in rows if in_validation(row["prompt"])]
    train = [row for row in rows if not in_validation(row["prompt"])]
    if not held:
        held, train = train[-1:], train[:-1]
    if not train:
        train, held = held[:1], held[1:]
    return train, held


def read_jsonl_file(path: str | Path, kind: str) -> list[dict]:
    """A student's JSON Lines file of ``kind``: its size checked on disk before a byte is read, then
    :func:`parse_jsonl`."""
    path = Path(path)
    if not path.is_file():
        raise UploadError(f"{path.name} is not a file: give a JSON Lines file, one example per line.")
    size = path.stat().st_size
    if size > MAX_UPLOAD_BYTES:
        raise UploadError(f"{path.name} has {size:,} bytes; an instruction set may have at most {MAX_UPLOAD_BYTES:,}.")
    return parse_jsonl(path.read_bytes(), kind, path.name)


def training_sets(kind: str, path: str | Path | None = None) -> tuple[list[dict], list[dict], str]:
    """``(train, validation, where)``: the shipped sets of ``kind``, or a student's file split by
    :func:`split_rows`."""
    if path is None:
        return load_set(kind, "train"), load_set(kind, "validation"), "shipped"
    return (*split_rows(read_jsonl_file(path, kind)), Path(path).name)
