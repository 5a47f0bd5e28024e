"""Check llmviz's CUDA paths on whatever CUDA GPU this machine has, end to end, in a few minutes, and print a table.

    python scripts/gpu_check.py                      # on a CUDA machine: every check, ~5 minutes on an H100
    python scripts/gpu_check.py --text tinyshakespeare.txt   # where Tiny Shakespeare is not in the corpus cache
    python scripts/gpu_check.py --skip nanogpt,compile       # leave checks out (names as in the table)
    python scripts/gpu_check.py --smoke              # without CUDA (or asked): a small run of the script on the CPU

What it checks (each a row: PASS, FAIL or SKIP, what was measured, seconds):

- ``logits``: random GPT-2-, Llama- and mixture-of-experts-style GPTs give the same logits on the CPU and the GPU;
- ``fused``: the fused attention (``scaled_dot_product_attention``) and the written-out one that records every
  intermediate agree on the GPU, logits and gradients, without dropout;
- ``cpu-vs-gpu``: 20 Trainer steps in float32 give the same losses on the CPU and the GPU;
- ``precision``: float32 (TF32 matmuls), bf16 autocast and fp16 with its gradient scaler each train 60 steps, and
  the two half precisions end within 2 % of float32's loss;
- ``syncs``: with ``torch.cuda.set_sync_debug_mode``, the steps between two reports never wait for the GPU (the
  losses are read back every 10 steps, at once);
- ``dropout``: a run with dropout that owns its process (the fused kernels, the run's own stream) repeats with its
  seed;
- ``checkpoint``: the precision and fp16's loss scale are saved and a resumed run takes them back;
- ``worker``: a lab job in a worker process trains on the GPU and hands back its snapshots;
- ``cli``: ``python -m llmviz train`` and ``sample`` on the GPU;
- ``compile``: ``torch.compile`` (``--compile``) trains;
- ``gpt2-shape``: a bf16 Trainer step on GPT-2 small's shape (12 layers, d 768, vocabulary 50,257, batch 16 × 1,024
  tokens): TFLOP/s (6 · N + 12 · L · T · d per token), against transformers' GPT2LMHeadModel in the same run and the
  GPU's bf16 matmul peak measured here; budget ≥ 300 TFLOP/s on an H100-class GPU;
- ``nanogpt``: benchmarks/nanogpt.py at full size (nanoGPT's shakespeare-char config, 5,000 steps, both sides in
  bf16, uncompiled): budgets best validation loss ≤ 1.47 and step rate ≥ 1.0× the nanoGPT-style reference.

The exit status is 0 when no check failed. Nothing in the test suite needs a GPU;
``tests/unit/scripts/test_gpu_check.py`` runs ``--smoke`` on the CPU.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from llmviz.data import corpus  # noqa: E402
from llmviz.models.gpt import GPT  # noqa: E402
from llmviz.models.presets import PRESETS  # noqa: E402
from llmviz.training.config import TrainConfig  # noqa: E402
from llmviz.training.trainer import Trainer, resume  # noqa: E402

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


@dataclass(frozen=True)
class Setting:
    """Where and how big: the GPU at full size, or the CPU smoke at a small one."""

    device: str
    smoke: bool
    text: str  # the training text of the short runs
    shakespeare: str | None  # Tiny Shakespeare, for the nanoGPT comparison
    skip: frozenset[str] = frozenset()  # the checks left out

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")


class Skipped(Exception):
    """A check that cannot run here (said in its row)."""


# ---------------------------------------------------------------------------- the checks


def seeded(build: Callable[[], torch.nn.Module], seed: int = 0) -> torch.nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def check_logits(setting: Setting) -> tuple[str, str]:
    if not setting.cuda:
        raise Skipped("needs CUDA (the CPU is the reference)")
    worst = []
    for preset in ("gpt-mini", "llama-style", "moe-tiny"):
        config = PRESETS[preset].replace(vocab_size=257, context_length=64, dropout=0.0)
        model = seeded(lambda config=config: GPT(config)).eval()
        idx = torch.randint(0, 257, (4, 64), generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            on_cpu = model(idx)[0]
            on_gpu = model.to(setting.device)(idx.to(setting.device))[0].cpu()
        worst.append((preset, float((on_cpu - on_gpu).abs().max())))
    ok = all(value <= 1e-5 for _, value in worst)
    return (PASS if ok else FAIL), "max |Δ logits| " + ", ".join(f"{name} {value:.1e}" for name, value in worst)


def check_fused(setting: Setting) -> tuple[str, str]:
    rows = []
    for preset in ("gpt-mini", "llama-style"):
        config = PRESETS[preset].replace(vocab_size=257, context_length=128, dropout=0.0)
        model = seeded(lambda config=config: GPT(config)).to(setting.device).train()
        idx = torch.randint(0, 257, (4, 128), generator=torch.Generator().manual_seed(1)).to(setting.device)
        fused_logits, fused_loss = model(idx, idx)
        fused_grads = torch.autograd.grad(fused_loss, list(model.parameters()))
        cache: dict = {}
        written_logits, written_loss = model(idx, idx, cache=cache)
        written_grads = torch.autograd.grad(written_loss, list(model.parameters()))
        logit_gap = float((fused_logits - written_logits).detach().abs().max())
        grad_gap = max(float((a - b).abs().max()) for a, b in zip(fused_grads, written_grads))
        rows.append((preset, logit_gap, grad_gap))
    ok = all(logits <= 1e-5 and grads <= 1e-5 for _, logits, grads in rows)
    detail = "; ".join(f"{name}: logits {a:.1e}, gradients {b:.1e}" for name, a, b in rows)
    return (PASS if ok else FAIL), detail + " (max |Δ|, float32, no dropout)"


def small_config(setting: Setting, **changes) -> TrainConfig:
    base = dict(
        model="gpt-mini",
        tokenizer="char",
        context_length=64,
        batch_size=16,
        steps=20,
        lr=1e-3,
        warmup_steps=5,
        eval_interval=1000,
        eval_batches=2,
        seed=3,
        device=setting.device,
        precision="float32",
    )
    if setting.smoke:
        base.update(model="gpt-nano", context_length=16, batch_size=8)
    return TrainConfig(**{**base, **changes})


def losses(trainer: Trainer) -> list[float]:
    return [metrics.train_loss for metrics in trainer.run()]


def check_cpu_vs_gpu(setting: Setting) -> tuple[str, str]:
    if not setting.cuda:
        raise Skipped("needs CUDA (the CPU is the reference)")
    on_cpu = losses(Trainer.from_text(setting.text, small_config(setting, device="cpu")))
    on_gpu = losses(Trainer.from_text(setting.text, small_config(setting)))  # unclaimed: float32 stays float32
    gap = max(abs(a - b) for a, b in zip(on_cpu, on_gpu))
    return (PASS if gap <= 1e-4 else FAIL), f"20 steps, max |Δ loss| {gap:.1e} (first {on_cpu[0]:.4f})"


def check_precision(setting: Setting) -> tuple[str, str]:
    precisions = ["float32", "bf16"] + (["fp16"] if setting.cuda else [])
    steps = 20 if setting.smoke else 60
    final = {}
    for precision in precisions:
        trainer = Trainer.from_text(setting.text, small_config(setting, precision=precision, steps=steps))
        trainer.claim_process()  # float32 then runs TF32 matmuls on CUDA
        curve = losses(trainer)
        if not all(math.isfinite(loss) for loss in curve) or curve[-1] >= curve[0]:
            return FAIL, f"{precision} did not train: {curve[0]:.3f} → {curve[-1]:.3f}"
        final[precision] = sum(curve[-5:]) / 5
    gaps = {p: abs(final[p] - final["float32"]) / final["float32"] for p in precisions[1:]}
    ok = all(gap <= 0.02 for gap in gaps.values())
    detail = ", ".join(f"{p} {loss:.4f}" for p, loss in final.items())
    return (PASS if ok else FAIL), f"mean loss of the last 5 of {steps} steps: {detail} (half precisions ≤ 2 % off)"


def waited_at(filename: str, line: int) -> str:
    """Where a wait for the GPU was asked: the file's last two folders, the line, and its code."""
    import linecache

    return f"{'/'.join(Path(filename).parts[-2:])}:{line} `{linecache.getline(filename, line).strip()[:60]}`"


def check_syncs(setting: Setting) -> tuple[str, str]:
    if not setting.cuda:
        raise Skipped("needs CUDA (torch.cuda.set_sync_debug_mode)")
    counts, where = {}, {}  # per precision: how many waits, and the lines of Python that waited
    for precision in ("bf16", "fp16"):
        trainer = Trainer.from_text(setting.text, small_config(setting, precision=precision, steps=32, dropout=0.1))
        trainer.claim_process()
        trainer.report_every = 10
        steps = trainer.run()
        for _ in range(10):  # warm-up: the first steps initialise cuBLAS, the allocator, the optimizer's state
            next(steps)
        torch.cuda.synchronize()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                for _ in range(20):  # steps 11–30: reports at 20 and 30
                    next(steps)
            finally:
                torch.cuda.set_sync_debug_mode("default")
        for _ in steps:
            pass
        waits = [w for w in caught if "synchroniz" in str(w.message)]
        counts[precision] = len(waits)
        where[precision] = sorted({waited_at(w.filename, w.lineno) for w in waits})
    ok = all(count <= 2 for count in counts.values())
    detail = ", ".join(f"{p}: {n} ({' '.join(where[p])})" for p, n in counts.items())
    return (PASS if ok else FAIL), f"waits for the GPU in 20 steps with 2 reports (budget 2): {detail}"


def check_dropout(setting: Setting) -> tuple[str, str]:
    curves = []
    for _ in range(2):
        trainer = Trainer.from_text(setting.text, small_config(setting, dropout=0.2, precision="bf16"))
        trainer.claim_process()
        curves.append(losses(trainer))
    gap = max(abs(a - b) for a, b in zip(*curves))
    # the flash-attention backward adds in a varying order on a GPU: the same masks, the last bits may differ
    ok = gap <= (1e-3 if setting.cuda else 0.0)
    return (PASS if ok else FAIL), f"the same seed twice, dropout 0.2 in the fused kernels: max |Δ loss| {gap:.1e}"


def check_checkpoint(setting: Setting) -> tuple[str, str]:
    precision = "fp16" if setting.cuda else "bf16"
    config = small_config(setting, precision=precision, steps=6)
    with tempfile.TemporaryDirectory() as folder:
        trainer = Trainer.from_text(setting.text, config)
        list(trainer.run(steps=3))
        scale = trainer.grad_scaler.get_scale() if trainer.grad_scaler is not None else None
        trainer.save(folder)
        saved = json.loads((Path(folder) / "checkpoint.json").read_text())["train_config"]["precision"]
        again = resume(folder, setting.text, device=setting.device)
        again_scale = again.grad_scaler.get_scale() if again.grad_scaler is not None else None
        list(again.run())
    ok = saved == again.config.precision == precision and scale == again_scale and again.step == 6
    return (PASS if ok else FAIL), f"{precision} saved and resumed (loss scale {scale} → {again_scale})"


def check_worker(setting: Setting) -> tuple[str, str]:
    from llmviz.jobs.manager import JobManager
    from llmviz.lab.live_status import JobState

    manager = JobManager(max_running=1, session_timeout=None, workers="process")
    try:
        trainer = Trainer.from_text(setting.text, small_config(setting, precision="auto", steps=30, dropout=0.1))
        job = manager.submit_training("gpu-check", trainer, label="gpu check")
        if not job.wait(300):
            return FAIL, "the job did not end in 5 minutes"
        status = job.status()
    finally:
        manager.shutdown()
    ok = status.state == JobState.FINISHED and status.step == 30 and job.worker_pid not in (None, os.getpid())
    steps = job.snapshots.steps() if job.snapshots is not None else []
    detail = f"{status.state} at step {status.step} in process {job.worker_pid}, snapshots {steps[:4]}…"
    return (PASS if ok else FAIL), detail + (f" ({status.error})" if status.error else "")


def check_cli(setting: Setting) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as folder:
        text = Path(folder) / "text.txt"
        text.write_text(setting.text)
        out = Path(folder) / "ck"
        train = [sys.executable, "-m", "llmviz", "train", "--corpus", str(text), "--model", "gpt-nano"]
        train += ["--tokenizer", "char", "--context", "32", "--steps", "30", "--eval-interval", "10"]
        train += ["--device", setting.device, "--out", str(out)]
        # the repository first, then whatever the caller's PYTHONPATH holds (packages carried to a bare machine)
        paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        trained = subprocess.run(train, capture_output=True, text=True, cwd=ROOT, env=environment, timeout=300)
        if trained.returncode != 0:
            return FAIL, f"train exited {trained.returncode}: {trained.stderr.strip().splitlines()[-1:]}"
        sample = [sys.executable, "-m", "llmviz", "sample", "--checkpoint", str(out), "--tokens", "40"]
        sampled = subprocess.run(sample, capture_output=True, text=True, cwd=ROOT, env=environment, timeout=300)
        precision = json.loads((out / "checkpoint.json").read_text())["train_config"]["precision"]
    line = next((x for x in trained.stderr.splitlines() if "training on" in x), "")
    ok = sampled.returncode == 0 and bool(sampled.stdout.strip())
    return (PASS if ok else FAIL), f"{precision}; {line.split('; ')[-1]}; sample: {sampled.stdout.strip()[:30]!r}"


def check_compile(setting: Setting) -> tuple[str, str]:
    trainer = Trainer.from_text(setting.text, small_config(setting, precision="auto", compile=True, steps=30))
    trainer.claim_process()
    start = time.perf_counter()
    curve = losses(trainer)
    ok = all(math.isfinite(loss) for loss in curve) and curve[-1] < curve[0]
    return (
        PASS if ok else FAIL
    ), f"30 compiled steps in {time.perf_counter() - start:.0f} s: {curve[0]:.3f} → {curve[-1]:.3f}"


def check_gpt2_shape(setting: Setting) -> tuple[str, str]:
    import gpt2_step  # benchmarks/gpt2_step.py

    result = gpt2_step.measure(setting.device, smoke=setting.smoke)
    if setting.smoke:
        return PASS, result.summary()
    summary = result.summary()
    if result.llmviz_tflops < 300 and result.h100_class and "compile" not in setting.skip:
        compiled = gpt2_step.measure(setting.device, compile_model=True, compare=False)  # what --compile gives
        summary += f"; with --compile: {compiled.llmviz_tflops:.1f} TFLOP/s ({compiled.llmviz_ms:.1f} ms)"
    budget = "; budget ≥ 300 TFLOP/s uncompiled" if result.h100_class else " (no budget: not an H100-class GPU)"
    return (PASS if result.llmviz_tflops >= 300 or not result.h100_class else FAIL), summary + budget


def check_footprint(setting: Setting) -> tuple[str, str]:
    """The memory estimate a GPU run is admitted by (``Footprint.device_bytes``) against the GPU's measured peak
    (``torch.cuda.max_memory_allocated``) over GPT-2 small's bf16 steps, as the lab trains them (the padded head's
    copies included: ``footprint.padded_head_bytes``)."""
    if not setting.cuda:
        raise Skipped("needs CUDA (a GPU's own memory)")
    import gpt2_step  # benchmarks/gpt2_step.py

    from llmviz.training import footprint

    device = torch.device(setting.device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    one_round, finish, model = gpt2_step.llmviz_side(gpt2_step.GPT2_SMALL, setting.device, "bf16", 1, 5)
    trainer_footprint = footprint.of_model(
        model,
        footprint.Shape(
            batch_size=gpt2_step.GPT2_SMALL.batch, context_length=gpt2_step.GPT2_SMALL.context, device=setting.device
        ),
        what="GPT-2 small, bf16",
        precision="bf16",
    )
    one_round()
    one_round()
    peak = torch.cuda.max_memory_allocated(device) - before
    finish()
    estimate = trainer_footprint.device_bytes
    detail = f"measured peak {peak / 2**30:.2f} GiB, estimate {estimate / 2**30:.2f} GiB ({estimate / peak:.2f}×)"
    return (PASS if estimate >= peak else FAIL), detail


def check_nanogpt(setting: Setting) -> tuple[str, str]:
    import nanogpt  # benchmarks/nanogpt.py

    if setting.shakespeare is None:
        raise Skipped("no Tiny Shakespeare here: pass --text PATH (a copy of it; its sha256 is checked)")
    result = nanogpt.compare(
        "full" if setting.cuda else "cpu",
        setting.shakespeare,
        setting.device,
        steps=20 if setting.smoke else None,
        progress=lambda line: print(f"  nanogpt {line}", flush=True),
    )
    lines = nanogpt.budgets(result)
    print(nanogpt.table(result), flush=True)
    detail = "; ".join(line for line, _ in lines)
    if setting.smoke:
        return PASS, "smoke (20 steps, budgets not judged): " + detail
    return (PASS if all(ok for _, ok in lines) else FAIL), detail


CHECKS: dict[str, Callable[[Setting], tuple[str, str]]] = {
    "logits": check_logits,
    "fused": check_fused,
    "cpu-vs-gpu": check_cpu_vs_gpu,
    "syncs": check_syncs,
    "precision": check_precision,
    "dropout": check_dropout,
    "checkpoint": check_checkpoint,
    "worker": check_worker,
    "cli": check_cli,
    "gpt2-shape": check_gpt2_shape,
    "footprint": check_footprint,
    "compile": check_compile,
    "nanogpt": check_nanogpt,
}
NOT_IN_SMOKE = {"compile"}  # minutes of compiling on a CPU


# ---------------------------------------------------------------------------- running them


def find_shakespeare(path: str | None) -> str | None:
    import nanogpt

    candidates = (
        [path]
        if path
        else [None, str(ROOT / "shared/data/tinyshakespeare.txt"), "/work/shared/data/tinyshakespeare.txt"]
    )
    for candidate in candidates:
        if candidate is not None and not Path(candidate).is_file():
            continue
        try:
            return (
                nanogpt.shakespeare(candidate)
                if candidate
                else corpus.load("tinyshakespeare", download_if_missing=False)
            )
        except Exception:  # noqa: BLE001 - not here: try the next place
            continue
    return None


def run(names: list[str], setting: Setting) -> list[tuple[str, str, str, float]]:
    rows = []
    for name in names:
        start = time.perf_counter()
        print(f"{name} …", flush=True)
        try:
            status, detail = CHECKS[name](setting)
        except Skipped as skipped:
            status, detail = SKIP, str(skipped)
        except Exception as error:  # noqa: BLE001 - a failing check is a row, and the others still run
            traceback.print_exc()
            status, detail = FAIL, f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        rows.append((name, status, detail, time.perf_counter() - start))
        print(f"{name}: {status} {detail}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", default=None, help="a copy of Tiny Shakespeare for the nanoGPT comparison")
    parser.add_argument("--smoke", action="store_true", help="the CPU smoke run, even where CUDA is available")
    parser.add_argument("--skip", default="", help="checks to leave out, comma-separated: " + ", ".join(CHECKS))
    parser.add_argument("--only", default="", help="run only these checks, comma-separated")
    args = parser.parse_args(argv)
    cuda = torch.cuda.is_available() and not args.smoke
    if not cuda:
        print("No CUDA GPU here" + (" (or --smoke)" if args.smoke else "") + ": a small smoke run on the CPU.")
        torch.set_num_threads(min(2, torch.get_num_threads()))
    else:
        print(f"CUDA: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    shakespeare = find_shakespeare(args.text)
    text = shakespeare[:200_000] if shakespeare else corpus.load("names")
    skip = {name.strip() for name in args.skip.split(",") if name.strip()}
    setting = Setting("cuda" if cuda else "cpu", not cuda, text, shakespeare, frozenset(skip))
    only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = (skip | set(only)) - set(CHECKS)
    if unknown:
        parser.error(f"unknown checks {', '.join(sorted(unknown))}: choose among {', '.join(CHECKS)}")
    names = [n for n in (only or CHECKS) if n not in skip and (cuda or n not in NOT_IN_SMOKE or n in only)]
    started = time.perf_counter()
    rows = run(names, setting)
    print()
    print("| check | result | what was measured | s |\n|---|---|---|---|")
    for name, status, detail, seconds in rows:
        print(f"| {name} | {status} | {detail} | {seconds:.0f} |")
    print(
        f"\n{sum(r[1] == PASS for r in rows)} passed, {sum(r[1] == FAIL for r in rows)} failed, "
        f"{sum(r[1] == SKIP for r in rows)} skipped in {time.perf_counter() - started:.0f} s"
    )
    return 1 if any(status == FAIL for _, status, _, _ in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
