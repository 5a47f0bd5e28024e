"""Streamlit's private part 15 (the list is :mod:`ui.streamlit_private`'s docstring): a link's number fitted to its
widget. Streamlit seeds a bound widget from the link (``SessionState._seed_widget_from_url``, with the serdes'
``min_value``/``max_value`` and a select slider's ``options``/``format_func``), and a number outside the widget's range
fell back to the default without a word (``steps=5000`` became 300). :func:`fit_link_values` wraps it: such a number is
fitted to the widget (``steps=5000`` becomes 2,000, a select slider's number its nearest choice) and reported
(:func:`ui.refused.link_value_fitted` says it in the page), as is a link's value the widget dropped. One mechanism, read
on its own: its own module beside the other private parts.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable

logger = logging.getLogger(__name__)


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


def fit_link_values(report: Callable[[str, str, str | None, str], None]) -> bool:
    """15. Once per server process: a number a link gives a bound widget outside what it takes is fitted to it
    (:func:`fitted_link_value`) instead of falling back to the default, and ``report(name, asked, how, used)`` is
    called for each link value the widget fitted (``how``: "at most 2,000", or None when only written the short way)
    or dropped (``how`` "dropped"; ``used``: the widget's default as the link writes it). Returns whether it is in
    place (False, with a warning in the log, should an upgrade have changed what it wraps)."""
    if _FITTING:
        _FITTING[0] = report
        return True
    try:
        from streamlit.runtime.state.session_state import SessionState

        original = SessionState._seed_widget_from_url
    except (ImportError, AttributeError) as error:
        logger.warning("A link's numbers are not fitted to their widgets (ui/streamlit_link_values.py): %s", error)
        return False

    @functools.wraps(original)
    def seed(self, metadata, user_key, widget_id, url_value):
        asked = url_value[-1] if isinstance(url_value, list) and url_value else url_value
        fitted = None
        if isinstance(asked, str):
            fitted = fitted_link_value(getattr(metadata.deserializer, "__self__", None), asked)
        if fitted is not None:
            url_value = [fitted[0]] if isinstance(url_value, list) else fitted[0]
        seeded = original(self, metadata, user_key, widget_id, url_value)
        try:
            if fitted is not None and seeded:
                self.query_params.set_corrected_value(user_key, metadata.serializer(fitted[1]), metadata.value_type)
                used = f"{fitted[1]:,}" if fitted[0] == str(fitted[1]) else fitted[0]  # 2,000; an option's label
                _FITTING[0](user_key, asked, fitted[2], used)
            elif not seeded and isinstance(asked, str) and asked:
                default = metadata.serializer(metadata.deserializer(None))
                default = default[0] if isinstance(default, list) and len(default) == 1 else default
                _FITTING[0](user_key, asked, "dropped", str(default))
        except Exception as error:  # noqa: BLE001 - the widget is seeded; only the word about it is lost
            logger.warning("Could not report the link's %r (ui/streamlit_link_values.py): %s", user_key, error)
        return seeded

    SessionState._seed_widget_from_url = seed
    _FITTING.append(report)
    return True


_FITTING: list[Callable[[str, str, str | None, str], None]] = []  # 15. the report of fit_link_values
