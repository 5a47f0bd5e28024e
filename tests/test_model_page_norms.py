"""The Model page's LayerNorm vs RMSNorm table shows LayerNorm's mean as 0.0000, never −0.0000 (a float's −3e-9)."""

import pyarrow as pa

from tests.test_app_pages import run_page
from ui.text import fixed


def test_fixed_drops_the_sign_of_a_number_that_shows_as_zero():
    assert [fixed(4)(v) for v in (-3e-9, -0.0, -0.00016, 0.25, -1.5)] == [
        "0.0000",
        "0.0000",
        "-0.0002",
        "0.2500",
        "-1.5000",
    ]
    assert fixed(2)(float("nan")) == "—"


def test_norms_table_shows_no_negative_zero():
    at = run_page("stages/model.py")
    [table] = [frame for frame in at.dataframe if "LayerNorm: mean" in frame.value.columns]
    shown = pa.ipc.open_stream(table.proto.arrow_data.styler.display_values).read_all().to_pandas()
    means = shown["LayerNorm: mean"].tolist()
    assert means and all(text == "0.0000" for text in means), means  # LayerNorm subtracts the mean: 0 for every token
    assert any(text.startswith("-") for text in shown["RMSNorm: mean"])  # RMSNorm keeps a negative mean's sign
