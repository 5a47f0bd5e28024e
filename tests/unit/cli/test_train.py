"""``python -m llmviz train``'s options for how a run trains: --stride, --precision and --compile."""

import json

import pytest
import torch

from llmviz.cli.main import main

TEXT = "the quick brown fox jumps over the lazy dog\n" * 60


def train(tmp_path, *options: str) -> int:
    corpus = tmp_path / "text.txt"
    corpus.write_text(TEXT)
    command = ["train", "--corpus", str(corpus), "--model", "gpt-nano", "--tokenizer", "char", "--context", "16"]
    command += ["--batch", "4", "--steps", "3", "--eval-interval", "3", "--out", str(tmp_path / "ck"), *options]
    return main(command)


def saved_config(tmp_path) -> dict:
    return json.loads((tmp_path / "ck" / "checkpoint.json").read_text())["train_config"]


def test_a_run_trains_on_windows_at_every_position_in_float32_uncompiled_by_default(tmp_path, capsys):
    assert train(tmp_path) == 0
    config = saved_config(tmp_path)
    assert config["stride"] == 1 and config["precision"] == "float32" and config["compile"] is False
    assert "training on CPU" in capsys.readouterr().err


def test_precision_bf16_trains_and_is_saved(tmp_path, capsys):
    assert train(tmp_path, "--precision", "bf16", "--stride", "16") == 0
    config = saved_config(tmp_path)
    assert config["precision"] == "bf16" and config["stride"] == 16
    assert " in bf16" in capsys.readouterr().err


def test_fp16_on_the_cpu_is_one_line_on_stderr_and_a_nonzero_exit(tmp_path, capsys):
    assert train(tmp_path, "--precision", "fp16") != 0
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "gradient scaler" in err and "CUDA" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "ck").exists()


def test_compile_where_it_cannot_work_is_one_line_on_stderr_and_a_nonzero_exit(tmp_path, capsys, monkeypatch):
    def unsupported(model, *args, **kwargs):
        raise RuntimeError("Windows not yet supported for torch.compile")

    monkeypatch.setattr(torch, "compile", unsupported)
    assert train(tmp_path, "--compile") != 0
    lines = capsys.readouterr().err.strip().splitlines()  # after the progress lines ("tokenizing …"), one error
    assert [line for line in lines if line.startswith("error: ")] == lines[-1:]
    assert (
        lines[-1].startswith("error: torch.compile cannot compile this model here") and "without --compile" in lines[-1]
    )
    assert not any("Traceback" in line for line in lines)


@pytest.mark.parametrize("option", ["--precision", "--stride"])
def test_bad_values_are_usage_errors(tmp_path, capsys, option):
    with pytest.raises(SystemExit) as exited:
        train(tmp_path, option, "fp8" if option == "--precision" else "one")
    assert exited.value.code == 2 and "Traceback" not in capsys.readouterr().err


def test_resume_goes_on_to_the_steps_asked_and_keeps_the_saved_total_otherwise(tmp_path, capsys):
    """--resume with --steps N trains to step N in all; without --steps the saved run's total holds (a default of
    500 used to replace it: a finished 2,000-step run resumed to nothing, a short one trained on to 500)."""
    corpus = tmp_path / "text.txt"
    assert train(tmp_path) == 0  # 3 steps
    folder = str(tmp_path / "ck")
    assert main(["train", "--corpus", str(corpus), "--resume", folder, "--steps", "5", "--out", folder]) == 0
    saved = json.loads((tmp_path / "ck" / "checkpoint.json").read_text())
    assert saved["step"] == 5 and saved["train_config"]["steps"] == 5
    assert main(["train", "--corpus", str(corpus), "--resume", folder, "--out", folder]) == 0
    saved = json.loads((tmp_path / "ck" / "checkpoint.json").read_text())
    assert saved["step"] == 5 and saved["train_config"]["steps"] == 5
    assert saved["train_config"]["compile"] is False


def test_keep_steps_keeps_those_steps_weights_beside_the_checkpoint(tmp_path, capsys):
    """--keep-steps writes OUT/steps/ (float16): the last step is the checkpoint itself, and a step's file is the
    run's weights at that step (the same run retrained to that step, compared here)."""
    from safetensors.torch import load_file

    from llmviz.training.checkpoint_steps import checkpoint_steps, saved_steps, step_file

    corpus = tmp_path / "text.txt"
    corpus.write_text(TEXT)
    common = ["train", "--corpus", str(corpus), "--model", "bigram-neural", "--context", "8", "--batch", "4"]
    common += ["--eval-interval", "5", "--warmup", "0", "--lr", "1e-2", "--optimizer", "sgd"]
    assert main([*common, "--steps", "5", "--keep-steps", "0,2,5", "--out", str(tmp_path / "ck")]) == 0
    assert saved_steps(tmp_path / "ck") == [0, 2] and checkpoint_steps(tmp_path / "ck", 5) == [0, 2, 5]
    # the references: step 0 is the run's initialisation (its saved config built again), and step 2 the snapshot the
    # app's job keeps of the same run at step 2
    from llmviz.jobs.blocking import train_blocking
    from llmviz.training.config import TrainConfig
    from llmviz.training.trainer import Trainer

    config = TrainConfig.from_dict(json.loads((tmp_path / "ck" / "checkpoint.json").read_text())["train_config"])
    initial = Trainer.from_text(TEXT, config).model.state_dict()
    job = train_blocking(Trainer.from_text(TEXT, config), snapshots=True)
    by_hand = Trainer.from_text(TEXT, config)  # the same run, two optimizer steps taken by hand: no snapshot involved
    for _ in range(2):
        by_hand.train_step()
        by_hand.step += 1  # as Trainer.run counts them (the learning rate's schedule reads it)
    for step, reference in ((0, initial), (2, job.snapshots.get(2)), (2, by_hand.model.state_dict())):
        kept = load_file(str(step_file(tmp_path / "ck", step)))
        for name, tensor in reference.items():
            assert torch.equal(kept[name], tensor.to(torch.float16)), (step, name)


def test_a_resumed_run_keeps_its_steps_and_a_new_run_in_the_folder_drops_the_earlier_runs(tmp_path, capsys):
    """Resumed in place, a run keeps the steps its first part kept and adds the ones it trains; a step past its last
    or before its resume step that is not kept is refused in one line; a new run saved over the folder
    (--overwrite) shows none of the earlier run's steps as its own."""
    from llmviz.training.checkpoint_steps import checkpoint_steps, saved_steps

    corpus = tmp_path / "text.txt"
    corpus.write_text(TEXT)
    out = str(tmp_path / "ck")
    common = ["train", "--corpus", str(corpus), "--model", "bigram-neural", "--context", "8", "--batch", "4"]
    common += ["--eval-interval", "5", "--warmup", "0", "--lr", "1e-2", "--optimizer", "sgd"]
    assert main([*common, "--steps", "5", "--keep-steps", "0,2", "--out", out]) == 0
    resumed = ["train", "--corpus", str(corpus), "--resume", out, "--out", out]
    for keep, said in (("1000", "1,000 is past the run's last step (50)"), ("1,20", "1 is before step 5")):
        capsys.readouterr()
        assert main([*resumed, "--steps", "50", "--keep-steps", keep]) != 0
        assert said in capsys.readouterr().err and saved_steps(out) == [0, 2]
    assert main([*resumed, "--steps", "50", "--keep-steps", "0,2,5,20"]) == 0
    assert "not kept" not in capsys.readouterr().err  # 0 and 2 are there from the run's first part
    assert checkpoint_steps(out, 50) == [0, 2, 5, 20, 50]
    assert main([*common, "--steps", "20", "--seed", "7", "--out", out, "--overwrite"]) == 0
    assert saved_steps(out) == [] and checkpoint_steps(out, 20) == []


def test_every_asked_step_of_a_model_too_big_for_the_apps_snapshot_cap_is_kept(tmp_path, capsys):
    """12.6 M parameters: five float32 snapshots (250 MB) are past the app's 128 MB per student, which kept only
    step 0 of them (the CLI's own snapshot store now holds what the asked steps need, taken as they arrive)."""
    from llmviz.training.checkpoint_steps import saved_steps

    corpus = tmp_path / "text.txt"
    corpus.write_text(TEXT)
    command = ["train", "--corpus", str(corpus), "--model", "gpt-micro", "--d-model", "512", "--layers", "4"]
    command += ["--context", "16", "--batch", "4", "--steps", "6", "--keep-steps", "0,1,2,5", "--out", str(tmp_path)]
    assert main(command) == 0
    assert saved_steps(tmp_path) == [0, 1, 2, 5] and "not kept" not in capsys.readouterr().err


def test_keep_steps_with_fsdp_is_refused_before_training(tmp_path, capsys):
    assert train(tmp_path, "--fsdp", "--keep-steps", "0,1") != 0
    assert "--keep-steps cannot be used with --fsdp" in capsys.readouterr().err
    assert not (tmp_path / "ck").exists() or not any((tmp_path / "ck").iterdir())


@pytest.mark.parametrize("steps", ["0,3", "0,x", "0,1000"])
def test_keep_steps_that_cannot_be_kept_are_refused_before_training(tmp_path, capsys, steps):
    code = None
    try:
        code = train(tmp_path, "--keep-steps", steps)
    except SystemExit as exited:  # argparse: a step that is no snapshot step, or no number
        code = exited.code
    assert code not in (0, None) and "Traceback" not in capsys.readouterr().err
    assert not (tmp_path / "ck" / "steps").exists()
