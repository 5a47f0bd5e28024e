"""A client of Streamlit's own protocol: a simulated student that costs the server what a browser does, and almost
nothing on the client's side.

A Streamlit page is drawn by the browser; the server only runs the page script and sends what it drew. The wire
between them is one websocket (``/_stcore/stream``) carrying protobuf messages: the browser sends ``BackMsg`` s
(``rerun_script`` with the address, the page and every widget's value) and receives ``ForwardMsg`` s (a new
session, one ``delta`` per element or block drawn, ``script_finished``). This client speaks that protocol the way
the browser does (checked against chromium: ``benchmarks/class_load.py --validate``):

- :meth:`Student.open` connects and asks for a page by its URL path, exactly as a browser's first message does
  (no widget states, the page's name, the address's query string, the browser's context), and waits for the
  script run to finish;
- :meth:`Student.set_widget` changes one widget's value the way a click does: it sends every widget's value (the
  browser sends all it has drawn), the changed one new, with the widget's fragment id when the widget lives in an
  ``st.fragment`` (Streamlit then reruns only that fragment), and the address with the widget's bound parameter
  written into it.

Every widget value comes from the elements the server sent (a widget's default, or the value the server set), so
the client needs to know nothing about the page. Each run is timed from the message sent to ``script_finished``
received, and counts its deltas and its errors (an exception element, or an error box: ``st.error``).

    async with Student("http://127.0.0.1:8501") as student:
        opened = await student.open("attention")
        flipped = await student.set_widget("mask", False)
        print(opened.seconds, opened.deltas, flipped.seconds, flipped.deltas)
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

#: script_finished's statuses that end a run (a run ended early for a rerun goes on with the next one)
FINISHED = {
    ForwardMsg.FINISHED_SUCCESSFULLY: "finished",
    ForwardMsg.FINISHED_WITH_COMPILE_ERROR: "compile error",
    ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY: "fragment finished",
}
ERROR_FORMAT = 1  # Alert.Format.ERROR: st.error


@dataclass
class Run:
    """One script run as the client saw it."""

    seconds: float
    deltas: int
    errors: list[str]
    status: str
    #: element types drawn, in order (the validation compares them with the browser's)
    elements: list[str] = field(default_factory=list)
    #: the text of every alert box drawn (st.error, st.warning, st.info, st.success)
    alerts: list[str] = field(default_factory=list)


@dataclass
class Widget:
    """A widget the server drew: its id, its value as the browser would send it, its fragment and bound key."""

    id: str
    kind: str  # the WidgetState field: bool_value, string_value, …
    value: Any
    fragment_id: str
    query_key: str
    label: str = ""


def widget_from_element(element, fragment_id: str) -> Widget | None:
    """The widget an element draws, with the value a browser holds for it when it is first drawn (its default,
    or the value the server set); None for an element that is not a widget or whose value a browser does not send
    before it is touched (buttons, data editors, uploads).

    >>> from streamlit.proto.Element_pb2 import Element
    >>> element = Element()
    >>> element.checkbox.id, element.checkbox.default = "$$ID-ab-mask", True
    >>> widget_from_element(element, "f1")
    Widget(id='$$ID-ab-mask', kind='bool_value', value=True, fragment_id='f1', query_key='', label='')
    """
    kind = element.WhichOneof("type")
    proto = getattr(element, kind) if kind else None
    value: Any
    if kind == "checkbox":
        state, value = "bool_value", proto.value if proto.set_value else proto.default
    elif kind in ("selectbox", "radio"):
        if proto.set_value:
            value = proto.raw_value
        elif 0 <= proto.default < len(proto.options):
            value = proto.options[proto.default]
        else:
            return None  # no option chosen: the browser sends nothing for it
        state = "string_value"
    elif kind == "multiselect":
        state = "string_array_value"
        value = list(proto.raw_values) if proto.set_value else [proto.options[i] for i in proto.default]
    elif kind == "slider" and proto.options:  # a select slider: the labels of its options
        state = "string_array_value"
        value = list(proto.raw_value) if proto.set_value else [proto.options[int(i)] for i in proto.default]
    elif kind == "slider":
        state, value = "double_array_value", list(proto.value if proto.set_value else proto.default)
    elif kind == "number_input":
        state = "int_value" if proto.data_type == proto.INT else "double_value"
        value = proto.value if proto.set_value else proto.default
        value = int(value) if state == "int_value" else value
    elif kind in ("text_input", "text_area"):
        state, value = "string_value", proto.value if proto.set_value else proto.default
    else:
        return None
    return Widget(proto.id, state, value, fragment_id, getattr(proto, "query_param_key", ""), proto.label)


def _state(widget: Widget, value: Any) -> WidgetState:
    state = WidgetState(id=widget.id)
    if widget.kind.endswith("_array_value"):
        getattr(state, widget.kind).data.extend(value)
    else:
        setattr(state, widget.kind, value)
    return state


def _in_link(value: Any) -> str:
    """A widget value as a bound parameter writes it into the address (booleans lower-case, as Streamlit does)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def _ends(message: ForwardMsg, fragment_id: str, either: bool) -> bool:
    """Whether ``message`` (a ``script_finished``) ends the run waited for: see :meth:`Student._run`."""
    if message.script_finished not in FINISHED:
        return False
    if message.script_finished != ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
        return not fragment_id or either
    return bool(fragment_id) and fragment_id in message.metadata.run.fragment_ids


class ProtocolError(RuntimeError):
    """The server did not answer as Streamlit does (closed the socket, or no run ended in time)."""


class Student:
    """One browser session, simulated: one websocket, the page's widgets and the address it is on."""

    def __init__(self, url: str, timeout_s: float = 120, headers: dict[str, str] | None = None) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.hostname not in ("127.0.0.1", "localhost"):
            raise ValueError("the protocol client only talks to a server on this machine (127.0.0.1)")
        self.base = url.rstrip("/")
        self.stream = f"ws://{parsed.netloc}/_stcore/stream"
        self.timeout_s = timeout_s
        self.headers = dict(headers or {})  # sent with the websocket's handshake (tests forge X-Forwarded-For)
        self.socket = None
        self.page_name = ""
        self.page_hash = ""
        self.query: dict[str, list[str]] = {}
        self.widgets: dict[str, Widget] = {}  # widget id → widget
        self.buttons: dict[str, Widget] = {}  # button id → the button (its value is a trigger, sent only on a click)
        self.values: dict[str, Any] = {}  # widget id → the value this session holds for it
        self.refreshes = 0  # script runs (a live section's refreshes) finished while :meth:`live` ran
        self.auto_reruns: dict[str, float] = {}  # fragment id → seconds: the page's run_every sections

    async def __aenter__(self) -> Student:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        if self.socket is not None:
            await self.socket.close()
            self.socket = None

    def _context(self) -> dict:
        query = urllib.parse.urlencode(self.query, doseq=True)
        url = f"{self.base}/{self.page_name}" + (f"?{query}" if query else "")
        return {"timezone": "UTC", "timezone_offset": 0, "locale": "en-US", "url": url, "color_scheme": "light"}

    async def open(self, path: str, query: str = "", states: list[WidgetState] | None = None) -> Run:
        """Connect and open the page at URL path ``path`` (``"attention"``; ``""`` for the home page), as a browser
        that loads that address does; returns the first script run (after any reruns the page asks for).
        ``states``: widget values to send with the first message, which a browser never does (tests forge them)."""
        import websockets

        await self.close()
        # a new page load, as a browser's: nothing of the last page's widgets, values or refreshing sections (a
        # button of the last page, pressed again, was a trigger the new page never drew: the teacher's second
        # "Ask the class" in the follow scenario did nothing)
        self.widgets.clear()
        self.buttons.clear()
        self.values.clear()
        self.auto_reruns.clear()
        self.page_name = path.strip("/")
        self.query = urllib.parse.parse_qs(query, keep_blank_values=True)
        began = time.perf_counter()
        self.socket = await websockets.connect(
            self.stream,
            subprotocols=["streamlit"],
            max_size=None,
            open_timeout=self.timeout_s,
            additional_headers=self.headers or None,
        )
        message = BackMsg()
        message.rerun_script.query_string = urllib.parse.urlencode(self.query, doseq=True)
        message.rerun_script.page_name = self.page_name
        message.rerun_script.widget_states.SetInParent()
        message.rerun_script.widget_states.widgets.extend(states or [])
        for name, value in self._context().items():
            setattr(message.rerun_script.context_info, name, value)
        await self.socket.send(message.SerializeToString())
        return await self._run(began, "")

    def widget(self, key: str) -> Widget:
        """The widget whose key is ``key`` (Streamlit ends a keyed widget's id with ``-<key>``), else the one whose
        label is ``key`` (a widget without a key)."""
        found = [w for w in self.widgets.values() if w.id.endswith(f"-{key}")] or [
            w for w in self.widgets.values() if w.label == key
        ]
        if len(found) != 1:
            raise KeyError(f"{len(found)} widgets with key or label {key!r} on this page")
        return found[0]

    async def click(self, key: str) -> Run:
        """Press the button whose key (or label) is ``key``, as a click does: a trigger sent once with every widget's
        value; returns the page's run (after any reruns it asks for, such as ``st.rerun()`` once a run starts)."""
        found = [b for b in self.buttons.values() if b.id.endswith(f"-{key}")] or [
            b for b in self.buttons.values() if b.label == key
        ]
        if len(found) != 1:
            raise KeyError(f"{len(found)} buttons with key or label {key!r} on this page")
        return await self.press_button(found[0])

    async def press_button(self, button: Widget, either: bool = False) -> Run:
        """Press ``button`` (one of :attr:`buttons`): a trigger sent once with every widget's value, in the button's
        fragment when it lives in one; returns the page's run (after any reruns it asks for), or with ``either`` the
        first run that ends, the fragment's or the whole page's (a button in a section may rerun the page)."""
        message = self._rerun_message(button.fragment_id)
        message.rerun_script.widget_states.widgets.append(WidgetState(id=button.id, trigger_value=True))
        began = time.perf_counter()
        await self.socket.send(message.SerializeToString())
        return await self._run(began, button.fragment_id if either else "", either)

    async def live(self) -> None:
        """Stay on the page as an open browser tab does, until the socket closes: read what the server sends, and
        rerun each section the page drew with ``run_every`` (the server announces it with an ``auto_rerun`` message;
        the browser, not the server, keeps the timer) every ``interval`` seconds, as Streamlit's frontend does
        (``setInterval``: a fragment rerun with every widget's value, marked ``is_auto_rerun``, whether or not the
        last one has finished). Counts the runs that finished in :attr:`refreshes`."""
        due: dict[str, float] = {}
        me = asyncio.current_task()
        try:
            # Python 3.11's wait_for loses a cancel that arrives as the socket's message does (gh-86296): the task
            # stays "cancelling" and would read on; its count of cancels is kept, so the loop asks it
            while self.socket is not None and not (me is not None and me.cancelling()):
                now = time.monotonic()
                for fragment_id, interval in list(self.auto_reruns.items()):
                    if now >= due.setdefault(fragment_id, now + interval):
                        due[fragment_id] = now + interval
                        await self.socket.send(self._rerun_message(fragment_id, auto=True).SerializeToString())
                for gone in set(due) - set(self.auto_reruns):
                    del due[gone]
                wait = min([*due.values(), now + 1.0]) - now
                try:
                    data = await asyncio.wait_for(self.socket.recv(), timeout=max(0.02, wait))
                except TimeoutError:
                    continue
                message = ForwardMsg()
                message.ParseFromString(data)
                self._seen(message, Run(0.0, 0, [], ""))
                self.refreshes += message.WhichOneof("type") == "script_finished"
        except Exception:  # noqa: BLE001 - the socket closed: nothing more to read
            return

    def _rerun_message(self, fragment_id: str = "", auto: bool = False) -> BackMsg:
        """A rerun as the browser sends it: the address, the page, every widget's value, the fragment (if any)."""
        message = BackMsg()
        rerun = message.rerun_script
        rerun.query_string = urllib.parse.urlencode(self.query, doseq=True)
        rerun.page_script_hash = self.page_hash
        if fragment_id:
            rerun.fragment_id = fragment_id
        rerun.is_auto_rerun = auto
        rerun.widget_states.widgets.extend(_state(self.widgets[i], v) for i, v in self.values.items())
        for name, field_value in self._context().items():
            setattr(rerun.context_info, name, field_value)
        return message

    async def rerun(self) -> Run:
        """Rerun the whole page as it is (every widget's value as held), as the browser does when asked to; every
        message sent before it has been read by the server once it returns (tests forge messages, then call it)."""
        began = time.perf_counter()
        await self.socket.send(self._rerun_message().SerializeToString())
        return await self._run(began, "")

    async def set_widget(self, key: str, value: Any, whole_page: bool = False, kind: str = "") -> Run:
        """Give the widget ``key`` the value ``value`` as a click or a typed value does; returns the run it causes
        (the widget's fragment alone when it lives in one, unless ``whole_page``). ``kind``: send the value as this
        field of the widget state instead of the widget's own (a forged message: tests use it)."""
        widget = self.widget(key)
        if kind:
            self.widgets[widget.id] = widget = Widget(
                widget.id, kind, value, widget.fragment_id, widget.query_key, widget.label
            )
        return await self.set_value(widget, value, whole_page)

    async def set_value(self, widget: Widget, value: Any, whole_page: bool = False, either: bool = False) -> Run:
        """Give ``widget`` (one of :attr:`widgets`) the value ``value``, as :meth:`set_widget` does (``either``: see
        :meth:`press_button`)."""
        self.values[widget.id] = value
        if widget.query_key:
            self.query[widget.query_key] = [_in_link(value)]
        fragment_id = "" if whole_page else widget.fragment_id
        message = self._rerun_message(fragment_id)
        began = time.perf_counter()
        await self.socket.send(message.SerializeToString())
        return await self._run(began, fragment_id, either)

    def _seen(self, message: ForwardMsg, run: Run) -> None:
        kind = message.WhichOneof("type")
        if kind == "navigation":  # the page this run drew (a browser sends its hash with each later rerun)
            self.page_hash = message.navigation.page_script_hash
        elif kind == "auto_rerun" and message.auto_rerun.fragment_id:  # a run_every section: the browser's timer
            self.auto_reruns[message.auto_rerun.fragment_id] = max(0.1, message.auto_rerun.interval)
        elif kind == "stop_auto_rerun":
            for fragment_id in message.stop_auto_rerun.fragment_ids:
                self.auto_reruns.pop(fragment_id, None)
        elif kind == "page_info_changed":
            self.query = urllib.parse.parse_qs(message.page_info_changed.query_string, keep_blank_values=True)
        elif kind == "delta":
            run.deltas += 1
            delta = message.delta
            if delta.WhichOneof("type") != "new_element":
                return
            element = delta.new_element
            element_kind = element.WhichOneof("type") or ""
            run.elements.append(element_kind)
            if element_kind == "exception":
                run.errors.append(f"{element.exception.type}: {element.exception.message}"[:200])
            elif element_kind == "alert":
                run.alerts.append(element.alert.body)
                if element.alert.format == ERROR_FORMAT:
                    run.errors.append(element.alert.body[:200])
            if element_kind == "button":
                self.buttons[element.button.id] = Widget(
                    element.button.id, "trigger_value", False, delta.fragment_id, "", element.button.label
                )
            widget = widget_from_element(element, delta.fragment_id)
            if widget is not None:
                self.widgets[widget.id] = widget
                if widget.id not in self.values or getattr(element, element_kind).set_value:
                    self.values[widget.id] = widget.value

    async def _run(self, began: float, fragment_id: str, either: bool = False) -> Run:
        """Read messages until the script run asked for has finished: the whole page's (``fragment_id`` empty; a
        run ended early for a rerun goes on with the next), or that fragment's (a section refreshing itself on a
        timer in the meantime is not it), or with ``either`` that fragment's or the whole page's."""
        run = Run(0.0, 0, [], "")
        deadline = began + self.timeout_s
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise ProtocolError(f"no script run finished in {self.timeout_s:.0f} s")
            try:
                data = await asyncio.wait_for(self.socket.recv(), timeout=left)
            except TimeoutError:
                raise ProtocolError(f"no script run finished in {self.timeout_s:.0f} s") from None
            except Exception as error:  # the socket closed
                raise ProtocolError(f"the server closed the connection: {error}") from None
            message = ForwardMsg()
            message.ParseFromString(data)
            self._seen(message, run)
            if message.WhichOneof("type") == "script_finished" and _ends(message, fragment_id, either):
                run.seconds = time.perf_counter() - began
                run.status = FINISHED[message.script_finished]
                return run
