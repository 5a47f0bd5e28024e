"""What both widget walks share: the pages and tabs walked, and which buttons are left alone; and the protocol
walk's student (:class:`Walker`), which ``tests/app/test_hostile_client.py`` also uses to forge a value for every
widget a page drew.

``tests/app/test_widget_walk.py`` operates every widget over Streamlit's protocol (the server's side: every section's
own rerun, no browser); ``tests/browser/test_widget_walk.py`` does it in chromium (the browser's side too).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from benchmarks._protocol_client import Run, Student
from ui.identity import COOKIE

# page path (as in the address) → (the link parameter of its tabs, the tabs' labels); a page without tabs: (None, ())
PAGES = {
    "": (None, ()),  # Home (the navigation's default page, at /)
    "tokens": ("tokens_tab", ("Train your own BPE", "Encode and decode", "Input–target pairs")),
    "embeddings": ("embeddings_tab", ("Cosine similarity", "Positions", "Word2vec", "Sentence embeddings")),
    "attention": ("attention_tab", ("Without weights", "Step by step", "Shapes", "Masks", "Grouped-query")),
    "model": ("model_tab", ("Architecture", "Inside a trained GPT", "From GPT-2 to Llama")),
    "inside": (
        "look",
        (
            "Logit lens",
            "Head detectors",
            "Loss per token",
            "Knock out heads",
            "Patch activations",
            "Steer",
            "Features",
            "Induction run",
        ),
    ),
    "training": (
        "training_part",
        ("Your runs", "Races", "Step 0 vs step N", "The loss by hand", "The decoder of a Transformer"),
    ),
    "sampling": ("sampling_part", ("Step mode", "Generate", "Three temperatures", "The KV cache")),
    "adapting": (
        "adapting_part",
        (
            "LoRA",
            "What training changed",
            "Quantization",
            "Quantization-aware training",
            "Fine-tuning for a task",
            "Training in less memory",
        ),
    ),
    "tuning": (
        "tuning_tab",
        ("Base, SFT and DPO side by side", "The response mask", "DPO: the chosen over the rejected", "Tune your own"),
    ),
    "serving": ("serving_part", ("The KV cache", "Paged attention", "Batching")),
}
#: (page, tab) with no widget of its own: Home, and Tuning's DPO curves (charts only)
NO_WIDGETS = {("", None), ("tuning", "DPO: the chosen over the rejected")}
MOST_WIDGETS = 60  # a tab's widgets operated at most (the default run); each costs a section or page run
# buttons whose press starts a run in a worker or a long computation: the default run leaves them alone (their own
# browser tests press them), -m extended presses them and then Stop
LONG_WORK = re.compile(r"^(Train|Start|Fine-tune|Race|Run |Resume|Quantize and|Download)", re.IGNORECASE)
NEVER = re.compile(r"^(Copy link|Stop|Cancel|Remove|Delete|Forget)", re.IGNORECASE)  # not a lesson's widget
CRASH = re.compile(r"Something went wrong in |needs the app around it")


@dataclass(frozen=True)
class Case:
    path: str
    param: str | None
    tab: str | None

    @property
    def query(self) -> str:
        if self.tab is None or self.tab == PAGES[self.path][1][0]:
            return ""
        return "?" + urlencode({self.param: self.tab})

    @property
    def name(self) -> str:
        return f"{self.path or 'home'}-{self.tab or 'page'}".replace(" ", "_")


CASES = [Case(path, param, tab) for path, (param, tabs) in PAGES.items() for tab in (tabs or (None,))]


#: the widget kinds the walk operates (Streamlit's element types)
OPERATED = {"checkbox", "selectbox", "radio", "multiselect", "slider", "number_input", "text_input", "text_area"}
#: widget kinds that are left alone, with the reason
LEFT_ALONE = {
    "button": "pressed (unless long work or not a lesson's)",
    "download_button": "a file to save: nothing reruns",
    "file_uploader": "tests/browser/test_tuning_runs.py and the uploads' tests send files",
    "link_button": "a link",
    "page_link": "a link",
    "dataframe": "a table's row selection: tests/browser/test_features.py clicks one",
    "plotly_chart": "a chart's selection: not a lesson's widget",
    "bidi_component": "the flow picture (ui/components/flow): tests/browser/test_flow.py drives it",
    "component_instance": "a custom component: its own browser test",
}
MAIN, SIDEBAR = 0, 1  # the root containers of a delta's path


@dataclass
class Drawn:
    """A widget as the page drew it: its element (options, bounds) and where it lives."""

    kind: str
    proto: Any
    fragment_id: str
    root: int


class Walker(Student):
    """A student (a new browser: a cookie of its own) that keeps every widget's element, in the order drawn."""

    def __init__(self, url: str) -> None:
        super().__init__(url, timeout_s=60, headers={"Cookie": f"{COOKIE}={secrets.token_urlsafe(32)}"})
        self.drawn: dict[str, Drawn] = {}
        self.order: list[str] = []  # widget ids, first drawn first
        self.current: set[str] = set()  # the widgets the page holds now (a browser's drawn widgets)
        self._this_run: set[str] = set()

    def _seen(self, message, run: Run) -> None:
        super()._seen(message, run)
        if message.WhichOneof("type") == "script_finished":
            self._finished(message)
        if message.WhichOneof("type") != "delta" or message.delta.WhichOneof("type") != "new_element":
            return
        element = message.delta.new_element
        kind = element.WhichOneof("type") or ""
        proto = getattr(element, kind, None)
        widget_id = getattr(proto, "id", "") if proto is not None else ""
        if kind in OPERATED or (kind in LEFT_ALONE and widget_id):
            if widget_id not in self.drawn:
                self.order.append(widget_id)
            root = message.metadata.delta_path[0] if message.metadata.delta_path else MAIN
            self.drawn[widget_id] = Drawn(kind, proto, message.delta.fragment_id, root)
            self._this_run.add(widget_id)
        elif widget_id and kind not in ("exception", "alert"):
            run.errors.append(f"a widget kind the walk does not know: {kind} ({widget_id})")

    def _finished(self, message) -> None:
        """A run ended: the widgets it drew replace those of what it reran (a section's, or the whole page's)."""
        status = message.script_finished
        if status == message.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
            rerun = set(message.metadata.run.fragment_ids)
            self.current = {i for i in self.current if self.drawn[i].fragment_id not in rerun} | self._this_run
        elif status == message.FINISHED_SUCCESSFULLY:
            self.current = set(self._this_run)
        self._this_run = set()  # also a run ended early for a rerun: the next one draws the page again
        for gone in set(self.values) - self.current:  # a browser sends the values of the widgets it holds
            del self.values[gone]


def problem_of(run: Run) -> str | None:
    """What went wrong in a run, or None: an exception drawn, a crash box, the router's refusal."""
    unknown = [error for error in run.errors if error.startswith("a widget kind")]
    boxes = [alert[:300] for alert in run.alerts if CRASH.search(alert)]
    exceptions = run.errors if "exception" in run.elements else []
    found = unknown + boxes + exceptions
    return "; ".join(found) if found else None
