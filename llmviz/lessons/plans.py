"""Lessons a class walks through (issue 69 §3): a small TOML file, an ordered list of steps, each a view of the app
(a link: a page and its settings), a few sentences for the teacher and for the students, and optionally a poll (one
of the step's page's predict-then-reveal questions, by its kind). docs/lessons.md says how to write one.

A bad file is one line that names the file, the line and what is wrong, here, in the app and on the command line
(``python -m llmviz lesson check FILE``)::

    title = "From text to the next token"

    [[step]]
    view = "tokens?text=The+cat+sat"
    teacher = "Ask how many tokens GPT-2 makes before anyone looks."
    students = "Guess first, then look at the chips."
    poll = "token-count"

>>> lesson = parse('title = "Two steps"\\n[[step]]\\nview = "tokens"\\nstudents = "Look."\\n'
...                '[[step]]\\nview = "sampling?temperature=0.2"\\npoll = "greedy-next"\\n', "two.toml")
>>> [(step.page, step.poll) for step in lesson.steps]
[('tokens', None), ('sampling', 'greedy-next')]
>>> parse('title = "Bad"\\n[[step]]\\nview = "tokens"\\npoll = "no-such"\\n', "bad.toml")
Traceback (most recent call last):
...
llmviz.lessons.plans.LessonError: bad.toml, line 4: step 1's poll "no-such" is not a question of the tokens page \
(token-count, word-pieces, fewer-tokens).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from llmviz.errors import LlmvizError

MAX_BYTES = 64 * 1024  # a lesson file's size, checked before it is read
MAX_STEPS = 60
MAX_WORDS = 2000  # the characters of a step's sentences, each
SHIPPED = Path(__file__).resolve().parent / "plans"

#: The app's pages by address (a step's view opens one), and the kinds of predict-then-reveal questions each asks
#: (:mod:`llmviz.lessons.quiz`, by ``Question.kind``): a step's poll is one of its page's. tests/app checks both
#: against the app.
PAGES: dict[str, tuple[str, ...]] = {
    "": (),
    "start": (),
    "tokens": ("token-count", "word-pieces", "fewer-tokens"),
    "embeddings": ("rope-distance",),
    "attention": ("most-attended", "visible-keys", "focused-head", "kv-cache"),
    "model": ("rmsnorm-parameters", "moe-active-parameters"),
    "inside": (),
    "training": ("lr-times-ten", "uniform-loss", "position-loss"),
    "sampling": ("greedy-next", "tokens-kept", "temperature-entropy"),
    "adapting": (),
    "tuning": (),
    "serving": (),
}
STEP_KEYS = ("view", "title", "teacher", "students", "poll")


class LessonError(LlmvizError):
    """A lesson file the app cannot use: one line with the file, the line and what is wrong."""


@dataclass(frozen=True)
class Step:
    """One step: its view (a relative link), its page, a title, the teacher's and the students' sentences, a poll."""

    view: str
    page: str
    title: str
    teacher: str
    students: str
    poll: str | None


@dataclass(frozen=True)
class Lesson:
    """A lesson: its name (the file's stem), title, a line about it, and its steps in order."""

    name: str  # the file's stem: how the lead row names it
    title: str
    about: str
    steps: tuple[Step, ...]


def _step_lines(text: str) -> list[int]:
    """The line number of each ``[[step]]`` header."""
    return [
        number for number, line in enumerate(text.splitlines(), start=1) if re.match(r"\s*\[\[\s*step\s*\]\]", line)
    ]


def _line_of(text: str, key: str, after: int = 0, before: int | None = None) -> int:
    """The line of ``key = …`` between lines ``after`` and ``before`` (``after`` itself when it is not there).

    >>> _line_of('a = 1\\n[[step]]\\nview = "x"\\n', "view", after=2)
    3
    """
    for number, line in enumerate(text.splitlines(), start=1):
        if number > after and (before is None or number < before) and re.match(rf"\s*\"?{key}\"?\s*=", line):
            return number
    return max(after, 1)


def _text(value: object, where: str, limit: int) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where} must be text in quotes")
    if len(value) > limit:
        raise ValueError(f"{where} is longer than {limit} characters")
    return value.strip()


def _page_of(view: str) -> str:
    return view.split("?", 1)[0].strip("./")


def _view(raw: dict, number: int) -> str:
    """Step ``number``'s view, checked: a page of the app and its settings."""
    if "view" not in raw:
        raise _At(None, f'step {number} has no view (a link such as "tokens?text=Hello")')
    try:
        view = _text(raw["view"], f"step {number}'s view", 2000)
    except ValueError as error:
        raise _At("view", str(error)) from None
    if "://" in view or view.startswith(("/", "javascript:")) or any(ch in view for ch in "\n\r\t<>\"'`"):
        raise _At("view", f"step {number}'s view must be a page of the app and its settings, not another address")
    if _page_of(view) not in PAGES:
        pages = ", ".join(p for p in PAGES if p)
        raise _At("view", f"step {number}'s view opens no page of the app ({_page_of(view)!r}; pages: {pages})")
    return view


def _step(raw: object, number: int) -> Step:
    """Step ``number`` (from 1) of a lesson, checked; :class:`_At` (what is wrong, the key it is at)."""
    if not isinstance(raw, dict):
        raise ValueError(f"step {number} must be a [[step]] table")
    unknown = sorted(set(raw) - set(STEP_KEYS))
    if unknown:
        raise _At(unknown[0], f"step {number} has an unknown key {unknown[0]!r} (a step has {', '.join(STEP_KEYS)})")
    view = _view(raw, number)
    page = _page_of(view)
    values = {}
    for key in ("title", "teacher", "students"):
        try:
            values[key] = _text(raw.get(key, ""), f"step {number}'s {key}", MAX_WORDS)
        except ValueError as error:
            raise _At(key, str(error)) from None
    poll = raw.get("poll")
    if poll is not None and (not isinstance(poll, str) or poll not in PAGES[page]):
        asks = ", ".join(PAGES[page]) or "it asks none"
        raise _At("poll", f'step {number}\'s poll "{poll}" is not a question of the {page or "Home"} page ({asks})')
    return Step(view, page, values["title"] or f"Step {number}", values["teacher"], values["students"], poll)


class _At(ValueError):
    def __init__(self, key: str | None, message: str):
        super().__init__(message)
        self.key = key


def _toml(text: str, name: str) -> dict:
    """The TOML ``text`` read, or :class:`LessonError` with the line TOML names."""
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise LessonError(f"{name}: a lesson file is at most {MAX_BYTES // 1024} KB.")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"\(at line (\d+), column (\d+)\)", str(error))
        what = re.sub(r"\s*\(at line.*\)", "", str(error)) or "not TOML"
        where = f"line {found.group(1)}" if found else "line 1"
        raise LessonError(
            f"{name}, {where}: {what[:1].lower() + what[1:]} (a lesson is TOML: docs/lessons.md)."
        ) from None


def _head(data: dict, text: str, name: str) -> tuple[str, str]:
    """The lesson's title and its line about it, checked."""
    unknown = sorted(set(data) - {"title", "about", "step"})
    if unknown:
        raise LessonError(
            f"{name}, line {_line_of(text, unknown[0])}: unknown key {unknown[0]!r} (a lesson has title, about "
            "and [[step]]s)."
        )
    try:
        title = _text(data.get("title", ""), "the title", 120)
        about = _text(data.get("about", ""), "about", MAX_WORDS)
    except ValueError as error:
        raise LessonError(f"{name}, line {_line_of(text, 'title')}: {error}.") from None
    if not title:
        raise LessonError(f'{name}, line 1: a lesson needs a title (title = "…").')
    return title, about


def _steps(raw_steps: object, text: str, name: str) -> tuple[Step, ...]:
    """Every step, checked in order; the first problem names its line."""
    headers = _step_lines(text)
    if not isinstance(raw_steps, list) or not raw_steps:
        raise LessonError(f"{name}, line {len(text.splitlines()) or 1}: a lesson needs at least one [[step]].")
    if len(raw_steps) > MAX_STEPS:
        raise LessonError(f"{name}, line {headers[MAX_STEPS]}: a lesson has at most {MAX_STEPS} steps.")
    steps = []
    for number, raw in enumerate(raw_steps, start=1):
        start = headers[number - 1] if number <= len(headers) else 1
        end = headers[number] if number < len(headers) else None
        try:
            steps.append(_step(raw, number))
        except _At as error:
            line = start if error.key is None else _line_of(text, error.key, start, end)
            raise LessonError(f"{name}, line {line}: {error}.") from None
        except ValueError as error:
            raise LessonError(f"{name}, line {start}: {error}.") from None
    return tuple(steps)


def parse(text: str, name: str = "lesson.toml") -> Lesson:
    """A lesson from its TOML ``text`` (``name``: the file's, for the error line); :class:`LessonError` (one line:
    the file, the line, what is wrong) when it cannot be used."""
    data = _toml(text, name)
    title, about = _head(data, text, name)
    return Lesson(Path(name).stem, title, about, _steps(data.get("step", []), text, name))


def load(path: str | Path) -> Lesson:
    """The lesson in file ``path`` (its size checked before it is read)."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise LessonError(f"{path.name}: a lesson file is at most {MAX_BYTES // 1024} KB.")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise LessonError(f"{path.name}: cannot be read ({type(error).__name__}).") from None
    return parse(text, path.name)


def shipped() -> dict[str, Lesson]:
    """The lessons that come with the app, by name (a file's stem), in the files' order."""
    return {path.stem: load(path) for path in sorted(SHIPPED.glob("*.toml"))}
