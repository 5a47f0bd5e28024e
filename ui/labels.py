"""Labels that tell models apart in the picker and on every page (pure functions: no Streamlit)."""

from __future__ import annotations

import time


def run_label(
    label: str, created: float, number: int | None = None, step: int | None = None, corpus: str | None = None
) -> str:
    """How a training run is named: its number in this browser session and the time it started first (what tells
    two runs of the same model apart, where a narrow sidebar still shows it), then its own label (model,
    optimizer, learning rate, corpus), the corpus when the label does not name it, and the step shown.

    The picker lists runs without the step (an option's label must not change while the run trains: the browser
    sends a choice back as its label); pages name the step they show.

    >>> started = time.mktime((2026, 11, 24, 14, 3, 12, 0, 0, -1))
    >>> run_label("GPT micro · AdamW · lr 0.003 · Python manual", started, number=2)
    'Run 2 · 14:03 · GPT micro · AdamW · lr 0.003 · Python manual'
    >>> run_label("names race: RNN", started, number=5, step=250, corpus="US census first names")
    'Run 5 · 14:03 · names race: RNN · US census first names · step 250'
    """
    clock = time.strftime("%H:%M", time.localtime(created))
    parts = [f"Run {number} · {clock}" if number is not None else f"Your run of {clock}", label]
    if corpus and corpus not in label:
        parts.append(corpus)
    if step is not None:
        parts.append(f"step {step}")
    return " · ".join(parts)
