"""What the lab's door (:class:`llmviz.lab.service.Lab`) hands a page: one run as every page sees it
(:class:`RunView`, from the registry alone, kept and live alike, with its state in words), its curve with its resume
marks (:class:`Curve`), a kept snapshot (:class:`Snapshot`) and a student's disk use (:class:`Usage`). Frozen values,
no database: a page draws them and asks the door again.

>>> from llmviz.lab.records import RunRecord
>>> view = RunView.of(RunRecord("r1", "s1", TRAINING, "Run 1", "parked", total=300, step=120, state_by="teacher",
...                             state_step=120))
>>> view.kind_words, view.resumable, view.state_line
('training run', True, 'parked by the teacher at step 120')
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from llmviz.lab.records import (
    AUTOENCODER,
    DPO,
    FINETUNE,
    LIVE_STATES,
    LORA,
    RACE,
    SFT,
    TASK,
    TRAINING,
    RunRecord,
)

KIND_WORDS = {  # what each kind of run is called on a page
    TRAINING: "training run",
    RACE: "race",
    FINETUNE: "fine-tuning run",
    LORA: "LoRA run",
    AUTOENCODER: "sparse autoencoder",
    SFT: "instruction-tuning run (SFT)",
    DPO: "preference-tuning run (DPO)",
    TASK: "task",
}


# the kinds a parked or interrupted run of goes on from its kept snapshot (Resume): a training run or a race keeps its
# text (by content hash) and settings, an SFT or DPO run its sets and settings (llmviz.adapt.tuning_runs), all it is
# rebuilt from; the other kinds are built from what a page held (a classifier's head, LoRA's adapters, an
# autoencoder's activations) and are started afresh from their kept snapshot
RESUMABLE_KINDS = (TRAINING, RACE, SFT, DPO)


@dataclass(frozen=True)
class RunView:
    """One run as every page sees it, from the registry alone (kept and live alike)."""

    id: str
    student: str
    kind: str
    label: str
    state: str
    state_by: str | None  # "student", "teacher", "server" or None (not known)
    state_step: int | None  # the step at which its state last changed
    step: int
    total: int
    model: str
    config: dict
    created: float
    updated: float
    resumes: tuple[int, ...]  # the steps at which it was resumed, in order
    best_val_loss: float | None
    last_loss: float | None
    error: str | None
    training: bool  # holds one of the machine's training slots now
    holder: str | None = None

    @classmethod
    def of(cls, record: RunRecord) -> RunView:
        return cls(
            id=record.id,
            student=record.student,
            kind=record.kind,
            label=record.label,
            state=record.state,
            state_by=record.state_by,
            state_step=record.state_step,
            step=record.step,
            total=record.total,
            model=record.model,
            config=dict(record.config or {}),
            created=record.created,
            updated=record.updated,
            resumes=tuple(int(step) for step in record.resumes or ()),
            best_val_loss=record.best_val_loss,
            last_loss=record.last_loss,
            error=record.error,
            training=bool(record.training),
            holder=record.holder,
        )

    @property
    def kind_words(self) -> str:
        """What the run is, in words ("sparse autoencoder")."""
        return KIND_WORDS.get(self.kind, self.kind)

    @property
    def live(self) -> bool:
        """Queued, running or paused in some app process."""
        return self.state in LIVE_STATES

    @property
    def resumable(self) -> bool:
        """Parked, interrupted or stopped before its last step, of a kind that resumes (:data:`RESUMABLE_KINDS`):
        Resume goes on with the same run."""
        ended_early = self.state in ("parked", "interrupted") or (self.state == "stopped" and self.step < self.total)
        return ended_early and self.kind in RESUMABLE_KINDS

    @property
    def resume_note(self) -> str:
        """Why a run that ended early has no Resume ("" when it has one, or did not end early).

        >>> RunView.of(RunRecord("r", "s", "lora", "LoRA 60 steps", "parked", step=20, total=60)).resume_note[:60]
        'A LoRA run is not resumed: its weights at step 20 are in the'
        """
        if self.resumable or self.state not in ("parked", "interrupted", "stopped") or self.step >= self.total:
            return ""
        if self.kind == TASK:
            return f"A task is not resumed: what it made by step {self.step} is kept, and its page shows it."
        article = "An" if self.kind_words[:1].lower() in "aeiou" else "A"
        return (
            f"{article} {self.kind_words} is not resumed: its weights at step {self.step} are in the sidebar's "
            "picker, and a new run can start from them."
        )

    @property
    def state_line(self) -> str:
        """The state in words, with who changed it and at which step.

        >>> RunView.of(RunRecord("r", "s", "training", "Run", "parked", step=401, state_by="teacher",
        ...                      state_step=401)).state_line
        'parked by the teacher at step 401'
        >>> RunView.of(RunRecord("r", "s", "training", "Run", "running", step=3)).state_line
        'running'
        """
        who = {"student": "you", "teacher": "the teacher", "server": "the server"}.get(self.state_by or "")
        if self.state in LIVE_STATES and self.state != "paused":
            return self.state
        line = self.state
        if who:
            line += f" by {who}"
        if self.state_step is not None:
            line += f" at step {self.state_step}"
        return line


# the kinds whose curve points keep measures of their own (Registry.series): DPO's ratios and margin, a classifier's
# held-out accuracy (a fine-tuning run, or one runner of a page section's comparison: submitted as a race)
SERIES_KINDS = (DPO, FINETUNE, RACE)


@dataclass(frozen=True)
class Curve:
    """A run's points from the registry: ``(step, training loss, validation loss)`` by step, and the steps at which
    it was resumed (a chart marks them)."""

    run_id: str
    points: tuple[tuple[int, float | None, float | None], ...]
    resumes: tuple[int, ...] = ()
    # the run kind's own measures, ``name → ((step, value), …)`` (a DPO run's ratios, margin and accuracy)
    series: dict[str, tuple[tuple[int, float], ...]] = dataclasses.field(default_factory=dict)

    @property
    def steps(self) -> list[int]:
        return [point[0] for point in self.points]


@dataclass(frozen=True)
class Snapshot:
    """A kept snapshot of a run: its step and its size on disk."""

    step: int
    nbytes: int


@dataclass(frozen=True)
class Usage:
    """A student's disk use (bytes) against their quota.

    >>> Usage(3 * 2**20, 50 * 2**20).line
    '3.0 MB of your 50 MB'
    """

    used: int
    quota: int

    @property
    def line(self) -> str:
        return f"{self.used / 2**20:.1f} MB of your {self.quota / 2**20:.0f} MB"

    @property
    def left(self) -> int:
        return max(0, self.quota - self.used)


MAX_ASKED_BYTES = 1024  # what a section notes of a start (its JSON), at most


def section_of(name: str, start: str, asked: dict) -> dict:
    """What a run keeps of the page section that started it, in its config (``config["section"]``): the section's
    name, the start it belongs to (the id of the start's first run) and what was asked (a small JSON object). A
    :class:`ValueError` when ``asked`` is not a small JSON object of plain values.

    >>> section_of("qat", "r1", {"bits": 4})
    {'name': 'qat', 'start': 'r1', 'asked': {'bits': 4}}
    >>> section_of("qat", "r1", {"bits": object()})
    Traceback (most recent call last):
    ...
    ValueError: what a section notes of its runs is a small JSON object of plain values
    """
    try:
        fits = len(json.dumps(asked, allow_nan=False)) <= MAX_ASKED_BYTES and len(name) <= 64
    except (TypeError, ValueError):
        fits = False
    if not fits or not isinstance(asked, dict):
        raise ValueError("what a section notes of its runs is a small JSON object of plain values")
    return {"name": name, "start": start, "asked": dict(asked)}


@dataclass(frozen=True)
class Start:
    """One start of a page section's runs (a comparison, a race): its runs ``label → RunView`` in the order they
    were started, and what the section noted (``asked``: the bits of a QAT run, …)."""

    id: str
    runs: dict[str, RunView]
    asked: dict


def starts(views: list[RunView], section: str) -> list[Start]:
    """The starts of ``section`` among ``views`` (one student's runs), oldest first; a start whose runs were all
    deleted is gone.

    >>> from llmviz.lab.records import RunRecord
    >>> def run(i, start, created):
    ...     config = {"section": section_of("lora", start, {"steps": 100})}
    ...     return RunView.of(RunRecord(i, "s", "lora", f"run {i}", "finished", config=config, created=created))
    >>> found = starts([run("b", "b", 2.0), run("a", "a", 1.0), run("a2", "a", 1.0)], "lora")
    >>> [(start.id, list(start.runs), start.asked) for start in found]
    [('a', ['run a', 'run a2'], {'steps': 100}), ('b', ['run b'], {'steps': 100})]
    >>> starts(found[0].runs.values(), "qat")
    []
    """
    grouped: dict[str, list[RunView]] = {}
    for view in sorted(views, key=lambda v: (v.created, v.id)):
        noted = view.config.get("section")
        if isinstance(noted, dict) and noted.get("name") == section:
            grouped.setdefault(str(noted.get("start")), []).append(view)
    return [
        Start(start, {view.label: view for view in runs}, dict(runs[0].config["section"].get("asked") or {}))
        for start, runs in grouped.items()
    ]
