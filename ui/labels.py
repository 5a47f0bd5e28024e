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


# Source Sans at 14 px (the sidebar's select box): each character's width in pixels, measured in chromium with a canvas
# and the box's own font (rounded up to 0.1 px). A character not listed counts as 14 px (a CJK character's width).
_GROUPS = {
    2.8: " ", 3.4: "i|", 3.5: "',.:;j·", 3.6: "l", 3.7: "I", 4.0: "!", 4.1: "f", 4.2: "()[]{}", 4.4: "-", 4.7: "t",
    4.9: "/\\r", 5.9: "*?sz", 6.0: '"', 6.2: "x", 6.4: "c", 6.5: "vy", 6.7: "JY–", 6.8: "L", 6.9: "Fek",
    7.0: "#$+0123456789<=>^_~×", 7.1: "ag", 7.2: "VX", 7.4: "E", 7.5: "STZ", 7.6: "A`hou", 7.7: "bn", 7.8: "dpq",
    7.9: "P", 8.0: "CR", 8.1: "K", 8.2: "B", 8.5: "&", 8.6: "DG", 8.7: "→", 9.0: "U", 9.1: "HN", 9.3: "OQ",
    10.1: "w", 10.2: "M", 11.0: "W", 11.2: "—", 11.5: "%", 11.6: "m", 11.9: "@", 13.3: "…",
}  # fmt: skip
_WIDTHS = {character: width for width, characters in _GROUPS.items() for character in characters}
PICKER_WIDTH = 186.0  # pixels of text the sidebar's select box shows at its default width (190, less a margin)


def text_width(text: str) -> float:
    """About how wide ``text`` is in the sidebar's select box, in pixels (never less than chromium draws it).

    >>> round(text_width("Shipped GPT · Python manual"), 1)
    174.2
    """
    return sum(_WIDTHS.get(character, 14.0) for character in text)


def fit(text: str, width: float = PICKER_WIDTH) -> str:
    """``text`` cut to fit ``width`` pixels, ending in "…" when it had to be cut (a separator before the cut goes).

    >>> fit("Shipped GPT · Python manual")
    'Shipped GPT · Python manual'
    >>> fit("Run 2 · 14:03 · GPT micro (2 layers, d 64) · AdamW · lr 0.003 · Python reference manual")
    'Run 2 · 14:03 · GPT micro (2 la…'
    """
    if text_width(text) <= width:
        return text
    room = width - _WIDTHS["…"]
    cut, used = "", 0.0
    for character in text:
        used += _WIDTHS.get(character, 14.0)
        if used > room:
            break
        cut += character
    return cut.rstrip(" ·,:(-") + "…"
