"""Picker options fit the sidebar's select box (ui/labels.py; the browser test measures them in chromium)."""

from ui import labels


def test_fit_keeps_what_fits_and_cuts_the_rest_with_an_ellipsis():
    assert labels.fit("Shipped RNN · names") == "Shipped RNN · names"
    long = "Run 12 · 14:03 · GPT micro (2 layers, d 64) · AdamW · lr 0.003 · Python reference manual"
    cut = labels.fit(long)
    assert cut.endswith("…") and long.startswith(cut[:-1]) and labels.text_width(cut) <= labels.PICKER_WIDTH
    assert labels.fit("語" * 40).endswith("…")  # characters not in the table count wide


def test_the_width_table_matches_what_chromium_draws():
    """Whole strings measured in chromium (a canvas with the select box's font, Source Sans 14 px): the table's sum
    is within a pixel or two, which the 4 px margin of PICKER_WIDTH covers (the browser test measures the options)."""
    measured = {"Shipped GPT · Python manual": 174, "Run 12 · names race: Transformer": 194, "mmmmmmmmmm": 116}
    for text, width in measured.items():
        assert abs(labels.text_width(text) - width) <= 2, text
