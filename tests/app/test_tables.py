"""Every number column of every table a page shows has one number of decimals (issue: "4.26" sat beside "4.2562").

A float column that a page leaves unformatted is drawn by the browser with up to four decimals, trailing zeros dropped:
0.57 beside 0.4519 in one column reads as two kinds of measurement. Each table here is read as the browser shows it:
a pandas Styler's display text, a column's printf format, or else the browser's own rule. Tables a student types into
(data editors) show what was typed and are left out. Page owners: add your page's views (its tabs) to VIEWS.
"""

import json
import math
import re

import pandas as pd
import pyarrow as pa
import pytest

from tests.support.pages import run_page

VIEWS = {  # page → the session state of each view measured (its tabs, its parts that open lazily)
    "stages/tokens.py": [{}, {"tokens_tab": "Encode and decode"}, {"tokens_tab": "Input–target pairs"}],
    "stages/embeddings.py": [{}, {"embeddings_tab": "Positions"}],
    "stages/attention.py": [
        {"lazy_attention_grid": True},
        {"attention_tab": "Step by step"},
        {"attention_tab": "Shapes"},
        {"attention_tab": "Grouped-query"},
    ],
    "stages/model.py": [
        {},
        {"model_tab": "Inside a trained GPT"},
        {"model_tab": "From GPT-2 to Llama"},
        {"preset": "moe-tiny"},
    ],
}


def browser_default(value: float) -> str:
    """How the browser draws a float that no format names: at most four decimals, trailing zeros dropped.

    >>> browser_default(4.26), browser_default(4.256234), browser_default(3.0)
    ('4.26', '4.2562', '3')
    """
    return f"{value:.4f}".rstrip("0").rstrip(".")


def shown_columns(element) -> dict[str, list[str]]:
    """Each float column of a table as the browser shows its cells."""
    frame, proto = element.value, element.proto
    styled = None
    if proto.arrow_data.HasField("styler") and proto.arrow_data.styler.display_values:
        styled = pa.ipc.open_stream(proto.arrow_data.styler.display_values).read_all().to_pandas()
    config = json.loads(proto.columns or "{}")
    shown = {}
    for number, column in enumerate(frame.columns):
        if not pd.api.types.is_float_dtype(frame[column]):
            continue
        values = [v for v in frame[column].tolist() if not math.isnan(v)]
        printf = config.get(str(column), {}).get("type_config", {}).get("format") or ""
        if styled is not None:
            texts = [str(v) for v in styled.iloc[:, number].tolist()]
        elif printf.startswith("%"):
            texts = [printf % v for v in values]
        else:
            texts = [browser_default(v) for v in values]
        shown[str(column)] = texts
    return shown


def decimals(text: str) -> int | None:
    """How many decimals a number as shown has (None: not a number, e.g. the dash of a missing value)."""
    number = re.search(r"-?[\d,]+(\.\d+)?", text)
    if number is None or number.group(0) in ("-", ","):
        return None
    return len(number.group(1)) - 1 if number.group(1) else 0


@pytest.mark.parametrize(
    ("path", "view"), [(path, view) for path, views in VIEWS.items() for view in views], ids=lambda value: str(value)
)
def test_every_number_column_shows_one_number_of_decimals(path, view):
    at = run_page(path, **view)
    tables = [element for element in at.dataframe if element.proto.editing_mode == 0]  # not the data editors
    assert tables, "the view shows a table"
    mixed = {}
    for element in tables:
        for column, texts in shown_columns(element).items():
            found = {decimals(text) for text in texts} - {None}
            if len(found) > 1:
                mixed[column] = texts[:8]
    assert mixed == {}, mixed
