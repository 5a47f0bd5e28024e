"""Tokens page: typed special-token text stays ordinary unless the student switches it on (#13.10)."""

from tests.test_app_pages import assert_clean, run_page


def _widget(widgets, label):
    return next(w for w in widgets if w.label == label)


def test_special_token_switch_shows_the_difference():
    at = run_page("stages/tokens.py", tokens_tab="Encode and decode")  # the lesson's tab under the chips
    _widget(at.selectbox, "Example").set_value("Special token").run()
    assert_clean(at)
    info = " ".join(str(e.value) for e in at.info)
    assert "<|endoftext|>" in info and "switch is off" in info
    switch = _widget(at.toggle, "Read special-token text such as <|endoftext|> as the special token")
    assert switch.value is False
    switch.set_value(True).run()
    assert_clean(at)
    assert "switch is on" in " ".join(str(e.value) for e in at.info)
