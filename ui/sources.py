"""What the model picker hands out and where its entries come from: :class:`ModelView`, :class:`Entry`,
the :class:`Source` protocol and the registry of sources.

Kept apart from :mod:`ui.picker` so that a source defined in its own module (:mod:`ui.hub`) can build
entries and views without importing the picker, which imports it to register it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from llmviz.errors import LlmvizError


@dataclass(frozen=True)
class ModelView:
    """What the picker selects: a ready-to-use, shared, read-only model with its tokenizer."""

    key: str  # stable and URL-safe: "shipped:gpt-python-docs", "run:<run_id>@<step>", "pretrained:minilm", …
    label: str
    model: Any  # nn.Module in eval mode, grads off (MiniLM: the llmviz.models.minilm.MiniLM object). Never mutate.
    tokenizer: Any
    meta: dict = field(default_factory=dict, compare=False, hash=False)
    family: str = "gpt"  # "gpt" | "charlevel" | "decoder" | "minilm" | …
    step: int | None = None
    run_id: str | None = None
    #: what tells these weights apart from any other a key has named (a checkpoint rewritten in place, a download
    #: of another revision): its files' signature or folder; empty where the key alone fixes the weights (a run's
    #: "run:<id>@<step>", the pretrained MiniLM)
    weights: str = ""

    @property
    def content_key(self) -> str:
        """The weights id: what a cache of anything computed from this model is keyed on (never its label). It
        changes whenever the weights do: a run's key holds its step, a checkpoint's its files' signature.

        >>> ModelView("run:ab12@50", "run", None, None).content_key
        'run:ab12@50'
        >>> ModelView("dir:lora", "lora", None, None, weights="9f2c").content_key
        'dir:lora#9f2c'
        """
        return f"{self.key}#{self.weights}" if self.weights else self.key


@dataclass(frozen=True)
class Entry:
    """One line of the picker."""

    key: str  # base key without "@step"
    label: str
    family: str
    note: str = ""  # a caption under the picker when chosen, e.g. "download 548 MB once"
    steps: tuple[int, ...] = ()  # for runs: the kept snapshot steps (a step slider is shown)
    available: bool = True  # False: listed with its note, but picking it falls back to the default


class NotReady(LlmvizError):
    """A picked model that is not ready yet (a run still preparing, weights still downloading): it stays picked, and
    pages show the shipped GPT until it is ready."""


class Source(Protocol):
    """A kind of model the picker can offer (see :func:`register_source`)."""

    prefix: str  # the part of the key before ":"

    def entries(self) -> list[Entry]: ...

    def load(self, key: str, step: int | None) -> ModelView: ...


SOURCES: dict[str, Source] = {}


def register_source(source: Source) -> None:
    """Add (or replace) a source; entries are listed in registration order."""
    SOURCES[source.prefix] = source
