"""What both widget walks share: the pages and tabs walked, and which buttons are left alone.

``tests/app/test_widget_walk.py`` operates every widget over Streamlit's protocol (the server's side: every section's
own rerun, no browser); ``tests/browser/test_widget_walk.py`` does it in chromium (the browser's side too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlencode

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
