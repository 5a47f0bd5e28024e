"""With a teacher key set and the lab's database out (a real PostgreSQL server of the test's own, stopped while the
app runs), pages go on: over Streamlit's protocol a student opens the Training page and the Tokens page and draws
no error (the generic one included), the Training page says the one sentence, and once the server is back the
student's kept run is listed again (issue 56 §3). Before, every page showed the generic error after 6-19 s."""

from __future__ import annotations

import pytest

from benchmarks._protocol_client import Student
from llmviz.lab.faults import NOTHING_DONE
from tests.support.app_server import running_app
from tests.support.asyncio_thread import run_coroutine
from ui.identity import COOKIE, new_secret

pytestmark = pytest.mark.slow  # an app server and a PostgreSQL server

UNREACHABLE = "The lab's database cannot be reached"


async def _open(url: str, secret: str, page: str):
    async with Student(url, timeout_s=300, headers={"Cookie": f"{COOKIE}={secret}"}) as student:
        return await student.open(page)


async def _press_train(url: str, secret: str):
    async with Student(url, timeout_s=300, headers={"Cookie": f"{COOKIE}={secret}"}) as student:
        await student.open("training")
        return await student.click("train")


def test_pages_go_on_while_postgresql_is_stopped_and_the_lab_comes_back(tmp_path, own_postgres):
    secret = new_secret()
    with own_postgres() as (url, start, stop):
        env = {"LLMVIZ_RUNS_DIR": str(tmp_path / "runs"), "LLMVIZ_DATABASE_URL": url, "LLMVIZ_TEACHER_KEY": "k" * 32}
        with running_app(env=env, log=tmp_path / "app.log") as app:
            first = run_coroutine(_open(app.url, secret, "training"))
            assert first.errors == [] and not any(UNREACHABLE in a for a in first.alerts)
            stop()
            for page in ("training", "tokens", "training"):
                run = run_coroutine(_open(app.url, secret, page))
                assert run.errors == [], (page, run.errors)
                if page == "training":
                    assert any(a.startswith(UNREACHABLE) for a in run.alerts), run.alerts
                    assert not any(a.startswith("No run") for a in run.alerts), run.alerts  # they are kept, not gone
            pressed = run_coroutine(_press_train(app.url, secret))
            assert pressed.errors == []
            # the refusal of Train is not the sentence again (issue 72 item 4: it was shown twice on one page)
            assert [a for a in pressed.alerts if UNREACHABLE in a] == [
                next(a for a in pressed.alerts if UNREACHABLE in a)
            ]
            assert NOTHING_DONE in pressed.alerts, pressed.alerts
            start()
            back = run_coroutine(_open(app.url, secret, "training"))
            assert back.errors == []
    log = (tmp_path / "app.log").read_text()
    assert "Traceback" not in log
