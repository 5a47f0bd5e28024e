"""A parked SFT or DPO run resumes as the same run (issue 59 §2: "pause/resume/park like every run"; issue 56 §2):
a real JobManager on a real SQLite lab trains a DPO run of the shipped SFT model the Tuning page's way, the student
goes (parked), and Resume goes on from its kept snapshot — the same id and label, one curve with its resume step —
against its own reference, the model it started from (its step-0 snapshot), never the weights it was parked at."""

from __future__ import annotations

import functools

import pytest
import torch

from llmviz.adapt import instructions, tuning_runs
from llmviz.adapt.dpo import DpoConfig
from llmviz.adapt.sft import SftConfig
from llmviz.jobs.manager import JobManager
from llmviz.jobs.resuming import resume_plan
from llmviz.lab.live_status import Planned
from llmviz.lab.service import Lab
from llmviz.lab.views import RunView
from llmviz.lessons.adapting import lab_footprint
from llmviz.training.checkpoint import load_checkpoint
from tests.support.paths import ROOT
from tests.support.waiting import wait_for

pytestmark = pytest.mark.processes  # the runs train in worker processes


def _start(manager, kind: str, config, model, tokenizer):
    sets = tuning_runs.sets_text(
        instructions.load_set(kind, "train")[:8], instructions.load_set(kind, "validation")[:4]
    )
    build = functools.partial(tuning_runs.build, kind, sets, config, tokenizer, model)
    needs = lab_footprint(model, 0, 40, kind.upper(), copies=1 if kind == "dpo" else 0, batch_size=2, context=128)
    [job] = manager.submit_race("student-1", [(f"{kind} run", Planned(build, needs, config.steps))], kind=kind)
    return job, sets


@pytest.mark.parametrize("kind", ["sft", "dpo"])
def test_a_parked_tuning_run_resumes_as_the_same_run(tmp_path, kind):
    model, tokenizer, _ = load_checkpoint(ROOT / "data" / "gpt-python-docs-sft")
    if kind == "sft":
        config = SftConfig(steps=40, batch_size=2, eval_interval=1000, lr=1e-4, seed=3)
    else:
        config = DpoConfig(steps=40, batch_size=2, eval_interval=1000, lr=1e-4, beta=0.1, seed=3)
    manager = JobManager(max_running=1, lab=Lab.at(tmp_path), session_timeout=0.01, reap_interval=3600)
    job, _ = _start(manager, kind, config, model, tokenizer)
    wait_for(lambda: job.status().step >= 3, timeout=300)
    manager.sessions.reap()  # the student has gone: parked
    assert job.wait(120)
    manager.keeper.flush()
    [kept] = manager.lab_side.kept_runs("student-1")
    assert (kept.kind, kept.state) == (kind, "parked") and RunView.of(kept).resumable
    registry = manager.keeper.lab.registry
    [(digest, _, _)] = registry.records.uploads(manager.lab_side.student("student-1"))
    assert digest == kept.config["text_sha256"]  # its sets, kept once by content
    parked_at = kept.step
    # what the resumed run's worker builds (resume_plan's recipe, run here): the parked weights, and (DPO) the
    # reference it started from
    build, _, step, _ = resume_plan(manager.keeper.lab, kept.student, kept.id)
    trainer = build()
    assert step == trainer.step == parked_at
    parked_path = dict((s, p) for s, p, _ in registry.records.snapshots(kept.id))[parked_at]
    parked_weights, _ = manager.keeper.lab.storage.read_snapshot(parked_path)
    for name, tensor in trainer.model.state_dict().items():
        assert torch.equal(tensor, parked_weights[name])
    if kind == "dpo":
        started = model.state_dict()
        for name, tensor in trainer.reference.state_dict().items():
            assert torch.equal(tensor, started[name].float())  # the model it started from, not the parked one
    # its line beside Resume says what goes on and what does not, as the recipe does (issue 72 §9): the weights, no
    # optimizer state (an SFT or DPO run keeps none), and batches drawn afresh: another order than if it never stopped
    line = manager.resume_line("student-1", kept.id)
    assert f"from step {parked_at} with the weights" in line and "keeps no optimizer state" in line, line
    assert "another order" in line and "optimizer states were" not in line, line
    assert registry.records.resume_state(kept.id) is None  # nothing it could have gone on from exactly
    rows = len(trainer.train_examples if kind == "sft" else trainer.train_pairs)
    never_stopped = torch.Generator().manual_seed(config.seed)
    for _ in range(parked_at):  # the batches an uninterrupted run drew before its next one (SftRunner.batch)
        torch.randint(rows, (config.batch_size,), generator=never_stopped)
    afresh = torch.Generator().manual_seed(config.seed + parked_at)
    assert torch.equal(trainer.generator.get_state(), afresh.get_state())  # drawn afresh from its seed and step
    assert not torch.equal(trainer.generator.get_state(), never_stopped.get_state())  # not the stream it had
    resumed = manager.lab_side.resume_kept("student-1", kept.id)
    assert resumed.wait(600) and resumed.status().state.value == "finished", resumed.status().describe()
    manager.keeper.flush()
    assert (resumed.id, resumed.label) == (kept.id, kept.label)  # the same run goes on: one history
    assert resumed.status().losses[0][0] == parked_at + 1  # it goes on from the parked step
    again = registry.records.run(kept.student, kept.id)
    assert again.state == "finished" and again.step == 40 and again.resumes == [parked_at]
    assert [step for step, *_ in registry.records.curve(kept.id)] == list(range(1, 41))  # one curve, every step
    manager.shutdown()
