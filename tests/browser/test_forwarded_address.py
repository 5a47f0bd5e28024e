"""A forwarded address counts only from a configured proxy (issue 50 §12): a forged ``X-Forwarded-For`` on a
connection from 127.0.0.1 made one client five students (uvicorn, which serves Streamlit, believes the header from
127.0.0.1 by default). Real servers, real websockets (``benchmarks/_protocol_client.py``) with forged headers; the
page ``tests/support/whoami_app.py`` says whom the server counts (``ui.picker.client_id``)."""

from __future__ import annotations

import pytest

from benchmarks._protocol_client import Student
from tests.support.app_server import AppDidNotStart, start_app
from tests.support.asyncio_thread import run_coroutine

pytestmark = pytest.mark.browser


def _server(tmp_path_factory, name: str, proxies: str | None):
    folder = tmp_path_factory.mktemp(name)
    # shares by address (a class's choice: LLMVIZ_SHARE_BY=address), the setting in which a forwarded address counts
    env = {"LLMVIZ_RUNS_DIR": str(folder), "LLMVIZ_CACHE_DIR": str(folder / "cache"), "LLMVIZ_SHARE_BY": "address"}
    if proxies is not None:
        env["LLMVIZ_TRUSTED_PROXIES"] = proxies
    try:
        return start_app("tests/support/whoami_app.py", env=env, log=folder / "server.log")
    except AppDidNotStart as error:
        pytest.fail(str(error))


@pytest.fixture(scope="module")
def no_proxy(tmp_path_factory):
    app = _server(tmp_path_factory, "no-proxy", None)
    yield app.url
    app.stop()


@pytest.fixture(scope="module")
def behind_proxy(tmp_path_factory):
    app = _server(tmp_path_factory, "behind-proxy", "127.0.0.1, ::1, 10.9.0.0/16")
    yield app.url
    app.stop()


def whom(url: str, forwarded: str | None) -> str:
    async def visit():
        headers = {"X-Forwarded-For": forwarded} if forwarded is not None else None
        async with Student(url, headers=headers) as student:
            opened = await student.open("")
            assert opened.errors == [], opened.errors
            return next(alert for alert in opened.alerts if alert.startswith("client: "))

    return run_coroutine(visit())


def test_without_a_configured_proxy_a_forged_forwarded_address_is_ignored_from_the_first_session(no_proxy):
    said = [whom(no_proxy, f"10.1.2.{n}") for n in range(5)]  # the server's first session is forged too
    assert not any("address 10.1.2." in line for line in said), said
    assert len({line.split(" · ")[0] for line in said}) == 5  # each is its own session (127.0.0.1 has no address)


def test_from_a_configured_proxy_the_right_most_untrusted_hop_is_the_student(behind_proxy):
    whom(behind_proxy, None)  # the process's first session (it sets whom to trust)
    assert whom(behind_proxy, "10.1.2.3").startswith("client: address 10.1.2.3 ")
    # a client's own forged hop stays on the left of the proxy's: the right-most hop the proxy did not add counts
    assert whom(behind_proxy, "6.6.6.6, 10.1.2.3").startswith("client: address 10.1.2.3 ")
    assert whom(behind_proxy, "10.1.2.3, 10.9.0.7").startswith("client: address 10.1.2.3 ")  # a trusted hop
