"""The Inside-the-model page under AppTest: the default path shows no error (its fragments are browser-tested)."""

from tests.test_app_pages import assert_clean, run_page

PAGE = "stages/inside.py"


def test_inside_page_default_path_has_no_error():
    at = run_page(PAGE)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    headers = [h.value for h in at.header]
    assert any("logit lens" in h for h in headers) and any("Head detectors" in h for h in headers)
    assert any("loss on every token" in h for h in headers)


def test_inside_page_survives_empty_and_odd_text():
    at = run_page(PAGE, lens_text="", loss_text="\x00\x01 ☃")
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
