"""Home under AppTest: it opens on the pipeline, each stage a box holding the link to its page."""

import ui
from tests.test_app_pages import assert_clean, run_page


def test_every_stage_box_holds_the_link_to_its_page():
    at = run_page()
    assert_clean(at)
    links = at.get("page_link")
    stages = [stage for stage in ui.PIPELINE if stage.exists]
    assert [link.proto.label for link in links] == ["Text (this page)"] + [stage.title for stage in stages[1:]]
    assert [link.proto.page for link in links] == ["" if s.key == "text" else s.key for s in stages]
    assert [c.value for c in at.caption if c.value.startswith("stage ")] == [f"stage {n}" for n in range(len(stages))]
