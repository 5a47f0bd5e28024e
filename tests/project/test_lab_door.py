"""The app reads a student's runs through one door (issue 56 §1): ``ui/lab.py`` asks the lab's service
(:mod:`llmviz.lab.service`); no page, panel or the picker reaches the registry's tables, a job manager's keeper or a
run's files. Pages reached ``manager().keeper.lab.registry`` in ten places, and the Training page said "No run yet"
above the run the registry kept."""

import re

from tests.support.paths import ROOT

REACHING = re.compile(r"\.registry\b|keeper\.lab|\.keeper\b|\.storage\b")


def test_no_page_panel_or_picker_reaches_past_the_lab_door():
    reaching = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for folder in ("ui", "stages")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if REACHING.search(line)
    ]
    assert reaching == [], "ask ui.lab (the lab's service) instead:\n" + "\n".join(reaching)
