"""WCAG 2.1's contrast, for the colour tests (tests/project/test_colours.py) and the browser's drawn colours
(tests/browser/test_presenter.py): a colour as 0-255 channels, its relative luminance, the ratio of two.

>>> round(contrast("#767676", "#ffffff"), 2)  # the lightest grey that passes AA on white
4.54
"""

from __future__ import annotations

import re


def rgb(colour) -> tuple[int, int, int]:
    """``#1f77b4``, ``rgb(1, 2, 3)`` or a tuple, as 0-255 integers."""
    if isinstance(colour, tuple):
        return colour
    if colour.startswith("#"):
        return tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return tuple(round(float(v)) for v in re.findall(r"[\d.]+", colour)[:3])


def luminance(colour) -> float:
    """WCAG 2.1's relative luminance."""
    channels = [c / 255 for c in rgb(colour)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a, b) -> float:
    """WCAG 2.1's contrast ratio (1 to 21)."""
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)
