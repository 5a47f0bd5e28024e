"""A student's (or the teacher's) tab in a class that answers together (issue 69), over Streamlit's own protocol
(:mod:`_protocol_client`): what the class's live box drew for this browser, read from the elements the server sent.

- :attr:`ClassTab.leads`: every move to the teacher's view the page drew (the follower's script of
  ``ui.class_live.go_script``: the lead's version and its link), in order, with when it arrived;
- :attr:`ClassTab.texts`: the text of every markdown, caption and alert drawn; :attr:`ClassTab.toasts`: every toast
  (a refusal from a button's callback is one);
- :attr:`ClassTab.radios`: each radio's options by label, :attr:`ClassTab.chosen` the one drawn chosen;
  :attr:`ClassTab.chart_titles`: each Plotly chart's title.

:meth:`ClassTab.follow` does what a browser does with the script: it opens the link (a navigation, a new page run on
a new websocket) and returns that run. :meth:`ClassTab.press` presses a button that may live in a refreshing section
(the run it waits for is the section's, or the whole page's when the section asks for one).

>>> lead_of('<script>/* lead "7" */(function () {var target = new URL("tokens?text=a\\\\u003cb", window.l')
(7, 'tokens?text=a<b')
>>> lead_of("<p>no script</p>") is None
True
"""

from __future__ import annotations

import json
import re
import time

if __package__:  # imported as benchmarks._class_client (the tests)
    from benchmarks._protocol_client import Run, Student
else:  # beside a benchmark script, which puts benchmarks/ on the path (class_load.py)
    from _protocol_client import Run, Student

_LEAD = re.compile(r"/\* lead \"?(?P<version>[^ \"]+)\"? \*/.*?new URL\((?P<link>\"(?:[^\"\\]|\\.)*\")", re.S)


def lead_of(body: str) -> tuple[int, str] | None:
    """The lead's version and link in a follower's script (``ui.class_live.go_script``), or None for other HTML (the
    teacher's own move after Next has a version that is not a number: None too)."""
    found = _LEAD.search(body)
    if found is None or not found["version"].isdigit():
        return None
    return int(found["version"]), json.loads(found["link"])


def split_link(link: str) -> tuple[str, str]:
    """A view's link as a page's path and its query.

    >>> split_link("tokens?text=a+b"), split_link("./?seed=1")
    (('tokens', 'text=a+b'), ('', 'seed=1'))
    """
    path, _, query = link.partition("?")
    return path.strip("./"), query


class ClassTab(Student):
    """One browser tab of the class: the protocol client, keeping what the class's live box and the page drew."""

    def __init__(self, url: str, cookie: str, timeout_s: float = 300) -> None:
        super().__init__(url, timeout_s=timeout_s, headers={"Cookie": cookie})
        self.leads: list[tuple[int, str, float]] = []  # (version, link, time.perf_counter() when it arrived)
        self.texts: list[str] = []
        self.toasts: list[str] = []
        self.radios: dict[str, list[str]] = {}
        self.chosen: dict[str, str | None] = {}  # each radio's option as the server drew it chosen (None: none)
        self.chart_titles: list[str] = []

    def _seen(self, message, run: Run) -> None:
        super()._seen(message, run)
        if message.WhichOneof("type") != "delta" or message.delta.WhichOneof("type") != "new_element":
            return
        element = message.delta.new_element
        kind = element.WhichOneof("type")
        if kind == "html":
            found = lead_of(element.html.body)
            if found is not None:
                self.leads.append((*found, time.perf_counter()))
        elif kind in ("markdown", "alert"):
            self.texts.append(getattr(element, kind).body)
        elif kind == "toast":
            self.toasts.append(element.toast.body)
        elif kind == "radio":
            radio = element.radio
            self.radios[radio.label] = list(radio.options)
            index = radio.default if radio.HasField("default") else -1
            self.chosen[radio.label] = radio.options[index] if 0 <= index < len(radio.options) else None
        elif kind == "plotly_chart":
            title = json.loads(element.plotly_chart.spec).get("layout", {}).get("title", {})
            self.chart_titles.append(title.get("text", "") if isinstance(title, dict) else str(title))

    def forget(self) -> None:
        """Forget what was drawn so far (the next run's elements are read alone)."""
        self.leads.clear()
        self.texts.clear()
        self.toasts.clear()
        self.chart_titles.clear()

    async def follow(self) -> Run:
        """Go where the last lead script points, as the browser's ``location.replace`` does: a new page run."""
        _, link, _ = self.leads[-1]
        path, query = split_link(link)
        return await self.open(path, query)

    async def press(self, key: str) -> Run:
        """Press the button whose key (or label) is ``key``; in a refreshing section, the run waited for is the
        section's or the whole page's, whichever ends first."""
        found = [b for b in self.buttons.values() if b.id.endswith(f"-{key}")] or [
            b for b in self.buttons.values() if b.label == key
        ]
        if not found:
            raise KeyError(f"no button with key or label {key!r} on this page")
        return await self.press_button(found[-1], either=bool(found[-1].fragment_id))

    async def choose(self, key: str, value) -> Run:
        """Give widget ``key`` the value ``value`` (the section's run or the page's, whichever ends first)."""
        widget = self.widget(key)
        return await self.set_value(widget, value, either=bool(widget.fragment_id))


def cookie_of(secret: str) -> str:
    """The identity cookie a browser sends (``ui.identity.COOKIE``) for ``secret``."""
    return f"llmviz_student={secret}"
