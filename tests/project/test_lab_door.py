"""The app reads a student's runs through one door (issue 56 §1): ``ui/lab.py`` asks the lab's service
(:mod:`llmviz.lab.service`); no page, panel or the picker reaches the registry's tables, a job manager's keeper or a
run's files. Pages reached ``manager().keeper.lab.registry`` in ten places, and the Training page said "No run yet"
above the run the registry kept."""

import re

from tests.support.paths import ROOT

REACHING = re.compile(r"\.registry\b|keeper\.lab|\.keeper\b|\.storage\b")
# ui/identity.py: the student's cookie and name (another change moves them behind the service)
ALLOWED = {"ui/identity.py"}
# the machine's count of runs training, which the service has no door for yet (one line of ui/lab.py)
ALLOWED_LINES = ("door.registry.training_count()",)


def test_no_page_panel_or_picker_reaches_past_the_lab_door():
    reaching = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for folder in ("ui", "stages")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if str(path.relative_to(ROOT)) not in ALLOWED
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if REACHING.search(line) and not any(allowed in line for allowed in ALLOWED_LINES)
    ]
    assert reaching == [], "ask ui.lab (the lab's service) instead:\n" + "\n".join(reaching)
