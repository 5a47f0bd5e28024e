"""A link's number fitted to its widget: what a numeric slider, number box or select slider of numbers takes of a
number the link gives (``steps=5000`` becomes 2,000, a select slider's number its nearest choice), read from the
widget's serde (its ``min_value``/``max_value``, or ``options``/``format_func``). Streamlit seeds the widget from the
link through its private part 15 (:func:`ui.streamlit_private.fit_link_values`), which asks here.
"""

from __future__ import annotations

import math


def _as_number(raw) -> float | None:
    """A link's text as a finite number (None: not one)."""
    try:
        number = float(raw)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _numbers(values) -> bool:
    return bool(values) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def fitted_link_value(serde, raw: str) -> tuple[str, object, str | None] | None:
    """15. A number a link gives a numeric slider, number box or select slider of numbers, fitted to what the widget
    takes: (the text the widget is seeded with, its value, how it was fitted: "at most 2,000"; None when the link
    only wrote a choice the short way, 10000 for "10,000 characters"). None: nothing to fit (in range, or no
    number). ``serde``: the widget's deserializer's object (Streamlit's ``SliderSerde``, ``NumberInputSerde``,
    ``SelectSliderSerde``)."""
    number = _as_number(raw)
    if number is None:
        return None
    low, high, kind = (
        getattr(serde, "min_value", None),
        getattr(serde, "max_value", None),
        getattr(serde, "data_type", -1),
    )
    if _numbers([low, high]) and kind in (0, 1):  # INT, FLOAT of Slider and NumberInput (not dates)
        if low <= number <= high:
            return None
        bound = high if number > high else low
        bound = int(bound) if kind == 0 else float(bound)
        return str(bound), bound, f"{'at most' if number > high else 'at least'} {bound:,}"
    return _nearest_choice(serde, raw, number)


def _nearest_choice(serde, raw: str, number: float) -> tuple[str, object, str | None] | None:
    """15. A select slider's choice nearest to a link's number (see :func:`fitted_link_value`)."""
    options, label = list(getattr(serde, "options", None) or []), getattr(serde, "format_func", str)
    if not _numbers(options) or raw in {label(option) for option in options}:
        return None
    nearest = min(options, key=lambda option: abs(option - number))
    if nearest == number:
        how = None
    elif number > max(options) or number < min(options):
        how = f"{'at most' if number > max(options) else 'at least'} {label(nearest)}"
    else:
        how = f"only its choices, the nearest being {label(nearest)}"
    return label(nearest), nearest, how
