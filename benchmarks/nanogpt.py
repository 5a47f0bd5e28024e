"""llmviz's Trainer against a nanoGPT-style reference on nanoGPT's shakespeare-char config, side by side.

    python benchmarks/nanogpt.py                       # the size that fits the device: full on CUDA, CPU otherwise
    python benchmarks/nanogpt.py --size cpu --record
    python benchmarks/nanogpt.py --text /path/to/tinyshakespeare.txt   # seeds the corpus cache (sha256 checked)

The full size is nanoGPT's ``config/train_shakespeare_char.py``: 6 layers, 6 heads, d 384, context 256, batch 64,
dropout 0.2, AdamW (β2 0.99, weight decay 0.1, clip 1.0), learning rate 1e-3 with 100 warmup steps and a cosine to
1e-4 at step 5,000, no biases, a tied head, the validation loss every 250 steps; on CUDA both train under bf16
autocast (fp16 with a gradient scaler where the GPU has no bf16) and neither is compiled. The CPU size is what
nanoGPT's README suggests for a laptop (4 layers, 4 heads, d 128, context 64, batch 12, no dropout), 300 steps by
default (its 2,000 take too long here), the validation loss every 100.

Both sides read the same text (Tiny Shakespeare, characters: 65 symbols; the first 90 % for training, the rest for
validation), draw the same training windows (``torch.randint(len(train) - context, (batch,))`` from the same seed,
nanoGPT's get_batch, which llmviz's stride-1 windows draw too), and are measured on the same fixed validation windows
(``--eval-batches`` batches drawn once at any position, as nanoGPT's estimate_loss draws them) outside the timed
steps. The reference is written here, nanoGPT's model.py and train.py loop in compact form (its own GPT-2
initialisation, exact GELU, ``nn.functional.scaled_dot_product_attention`` with dropout, fused AdamW on CUDA, the
loss read back every 10 steps); llmviz trains with its Trainer as the command line does (``claim_process``: fused
dropout from the run's stream, TF32 on CUDA), its GPT switched to nanoGPT's model: no biases, a tied head and the
exact GELU (``gelu="exact"``, nanoGPT's ``nn.GELU()``; llmviz's default is GPT-2's tanh approximation, a different
function whose CPU kernel costs about 2.3 times as much, some 6 % of a CPU-size step). The two are stepped in turns
of 10 steps, the side that goes first alternating, so that a change in the machine's load falls on both (each side's
process CPU time is printed too); the step rate is the median over the rounds (a turn of each) of the per-round ratio,
printed with its quartiles and extremes and the load average (``benchmarks/_rounds.py``), the first round (each side's
first steps) left out. Both sides time the same work: the Trainer's own validation loss (one batch at its
last step, which its loop always takes) is timed apart and left out of its training time, as the reference's
training time has no evaluation in it.

Throughput: tokens per second of the timed steps, and TFLOP/s with nanoGPT's estimate_mfu count (PaLM, appendix B):
6 · N + 12 · layers · context · d_model per token, N = the parameters of the matrices the tokens go through (the
blocks' and the head's; the token table is the head, tied).

Two references where the optimizer's kernel differs (the CPU): nanoGPT's loop takes AdamW's per-tensor kernel on
the CPU (``fused`` only on CUDA) while llmviz's Trainer takes the fused one everywhere, so the reference runs twice
side by side, **as shipped** and **on equal terms** (the same model and loop with llmviz's AdamW kernel), from the same
initialisation and batches; the three sides take turns going first, round by round. On CUDA the kernels are the same
and the reference runs once.

Budgets (printed as PASS/FAIL): full size on CUDA, llmviz's best validation loss ≤ 1.47 and its step rate ≥ 1.0× the
reference's; CPU size, llmviz's best validation loss within 1 % of the reference's, its step rate ≥ 1.0× the
reference's as shipped and ≥ 1.05× on equal terms (issue 71 §3).
``--record`` appends the dated result (machine, load, commit) to docs/benchmarks/nanogpt.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import math
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from _rounds import Rounds, load_average  # noqa: E402 - this folder is on sys.path (the benchmarks' helpers)

from llmviz.data import corpus  # noqa: E402
from llmviz.errors import CorpusUnavailable  # noqa: E402
from llmviz.training.config import TrainConfig  # noqa: E402
from llmviz.training.trainer import Trainer  # noqa: E402

RECORD = ROOT / "docs" / "benchmarks" / "nanogpt.md"
SHIPPED = "nanoGPT-style reference (in the benchmark)"  # AdamW's kernel as nanoGPT ships it: per-tensor on the CPU
EQUAL = "the same reference with llmviz's AdamW kernel"  # equal terms (issue 71 §3): only where the kernels differ
EQUAL_TERMS_TARGET = 1.05  # issue 71 §3: llmviz's lead on equal terms, by the median round, quiet (CPU size)


@dataclass(frozen=True)
class Size:
    """One side-by-side setting: nanoGPT's names."""

    n_layer: int
    n_head: int
    n_embd: int
    block_size: int
    batch_size: int
    dropout: float
    max_iters: int
    eval_interval: int
    eval_iters: int
    learning_rate: float = 1e-3
    min_lr: float = 1e-4
    warmup_iters: int = 100
    beta1: float = 0.9
    beta2: float = 0.99
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    log_interval: int = 10  # the reference reads its loss back every this many steps, as nanoGPT's loop


SIZES = {
    # config/train_shakespeare_char.py
    "full": Size(6, 6, 384, 256, 64, 0.2, 5000, 250, 200),
    # nanoGPT's README, "I only have a macbook": the CPU run, shorter
    "cpu": Size(4, 4, 128, 64, 12, 0.0, 300, 100, 20),
}


# ---------------------------------------------------------------------------- the reference


class Block(nn.Module):
    """nanoGPT's Block with bias=False: x + attn(ln_1(x)), x + mlp(ln_2(x))."""

    def __init__(self, size: Size):
        super().__init__()
        d = size.n_embd
        self.n_head, self.dropout = size.n_head, size.dropout
        self.ln_1 = nn.LayerNorm(d, bias=False)
        self.c_attn = nn.Linear(d, 3 * d, bias=False)
        self.attn_proj = nn.Linear(d, d, bias=False)
        self.ln_2 = nn.LayerNorm(d, bias=False)
        self.c_fc = nn.Linear(d, 4 * d, bias=False)
        self.mlp_proj = nn.Linear(4 * d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, width = x.shape  # (B, T, C)
        q, k, v = self.c_attn(self.ln_1(x)).split(width, dim=2)  # 3 × (B, T, C)
        q, k, v = (t.view(batch, tokens, self.n_head, width // self.n_head).transpose(1, 2) for t in (q, k, v))
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)  # (B, H, T, hd)
        y = y.transpose(1, 2).contiguous().view(batch, tokens, width)  # (B, T, C)
        x = x + F.dropout(self.attn_proj(y), p, self.training)
        return x + F.dropout(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)))), p, self.training)  # (B, T, C)


class ReferenceGPT(nn.Module):
    """nanoGPT's GPT: token + position embeddings, blocks, final LayerNorm, a head tied to the token table."""

    def __init__(self, size: Size, vocab_size: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, size.n_embd)
        self.wpe = nn.Embedding(size.block_size, size.n_embd)
        self.blocks = nn.ModuleList([Block(size) for _ in range(size.n_layer)])
        self.ln_f = nn.LayerNorm(size.n_embd, bias=False)
        self.lm_head = nn.Linear(size.n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        self.dropout = size.dropout
        for module in self.modules():  # GPT-2's initialisation, as nanoGPT's _init_weights
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
        for name, parameter in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(parameter, mean=0.0, std=0.02 / math.sqrt(2 * size.n_layer))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1], device=idx.device)  # (T,)
        x = F.dropout(self.wte(idx) + self.wpe(positions), self.dropout, self.training)  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))  # (B, T, V)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def reference_lr(size: Size, it: int) -> float:
    """nanoGPT's get_lr: linear warmup, then a cosine to min_lr at max_iters (lr_decay_iters)."""
    if it < size.warmup_iters:
        return size.learning_rate * (it + 1) / (size.warmup_iters + 1)
    ratio = (it - size.warmup_iters) / (size.max_iters - size.warmup_iters)
    return size.min_lr + 0.5 * (1.0 + math.cos(math.pi * min(ratio, 1.0))) * (size.learning_rate - size.min_lr)


class Reference:
    """nanoGPT's training loop: get_batch, autocast forward, (scaled) backward, clip, AdamW, loss read every 10."""

    def __init__(
        self,
        size: Size,
        vocab_size: int,
        train: torch.Tensor,
        device: str,
        precision: str,
        seed: int,
        fused: bool | None = None,
    ):
        """``fused``: AdamW's kernel; None: as nanoGPT ships it (the fused kernel on CUDA, the per-tensor one
        elsewhere)."""
        self.size, self.train, self.device = size, train, torch.device(device)
        self.fused = self.device.type == "cuda" if fused is None else fused
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)  # its own initialisation, drawn from its own seed
            self.model = ReferenceGPT(size, vocab_size).to(self.device)
        decay = [p for p in self.model.parameters() if p.dim() >= 2]
        no_decay = [p for p in self.model.parameters() if p.dim() < 2]
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": size.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=size.learning_rate,
            betas=(size.beta1, size.beta2),
            fused=self.fused,
        )
        self.dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        self.scaler = torch.amp.GradScaler("cuda") if precision == "fp16" else None
        self.generator = torch.Generator().manual_seed(seed)  # the same stream as llmviz's batches
        self.step = 0
        self.last_loss = float("nan")

    def get_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        T = self.size.block_size
        ix = torch.randint(len(self.train) - T, (self.size.batch_size,), generator=self.generator)
        x = torch.stack([self.train[i : i + T] for i in ix])  # (B, T)
        y = torch.stack([self.train[i + 1 : i + 1 + T] for i in ix])  # (B, T)
        if self.device.type == "cuda":
            return x.pin_memory().to(self.device, non_blocking=True), y.pin_memory().to(self.device, non_blocking=True)
        return x.to(self.device), y.to(self.device)

    def autocast(self):
        if self.dtype is None:
            return torch.autocast(self.device.type, enabled=False)
        return torch.autocast(self.device.type, dtype=self.dtype)

    def train_steps(self, count: int) -> None:
        self.model.train()
        for _ in range(count):
            for group in self.optimizer.param_groups:
                group["lr"] = reference_lr(self.size, self.step)
            x, y = self.get_batch()
            with self.autocast():
                loss = self.model(x, y)
            (self.scaler.scale(loss) if self.scaler is not None else loss).backward()
            if self.scaler is not None:
                self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.size.grad_clip)
            if self.scaler is not None:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.step += 1
            if self.step % self.size.log_interval == 0:
                self.last_loss = loss.item()


# ---------------------------------------------------------------------------- both sides


def llmviz_trainer(size: Size, text: str, device: str, precision: str, seed: int, compile_model: bool) -> Trainer:
    """llmviz's Trainer with nanoGPT's settings (its GPT by switches: no biases, a tied head, the exact GELU)."""
    config = TrainConfig(
        model="gpt-mini",
        tokenizer="char",
        context_length=size.block_size,
        batch_size=size.batch_size,
        steps=size.max_iters,
        lr=size.learning_rate,
        warmup_steps=size.warmup_iters,
        schedule="cosine",  # to lr / 10 = min_lr
        grad_clip=size.grad_clip,
        weight_decay=size.weight_decay,
        beta1=size.beta1,
        beta2=size.beta2,
        dropout=size.dropout,
        d_model=size.n_embd,
        n_layers=size.n_layer,
        n_heads=size.n_head,
        architecture={"bias": False, "tie_weights": True, "gelu": "exact"},  # nanoGPT's model.py: nn.GELU()
        eval_interval=size.max_iters,  # its own evaluation: once, at the end, one batch (timed apart: compare)
        eval_batches=1,
        val_fraction=0.1,
        seed=seed,
        device=device,
        precision=precision,
        compile=compile_model,
    )
    trainer = Trainer.from_text(text, config)
    trainer.claim_process()  # this process is the run's, as on the command line
    return trainer


def validation_windows(val: torch.Tensor, size: Size, seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``eval_iters`` batches of windows at any position of the validation part, drawn once."""
    generator = torch.Generator().manual_seed(seed + 7)
    T, batches = size.block_size, []
    for _ in range(size.eval_iters):
        ix = torch.randint(len(val) - T, (size.batch_size,), generator=generator)
        batches.append((torch.stack([val[i : i + T] for i in ix]), torch.stack([val[i + 1 : i + 1 + T] for i in ix])))
    return batches


@torch.no_grad()
def validation_loss(loss_of, batches, device: torch.device, dtype: torch.dtype | None) -> float:
    """The mean loss over the fixed validation batches, under the run's autocast (as nanoGPT's estimate_loss)."""
    total = torch.zeros((), device=device)
    for x, y in batches:
        if dtype is None:
            total += loss_of(x.to(device), y.to(device)).float()
        else:
            with torch.autocast(device.type, dtype=dtype):
                total += loss_of(x.to(device), y.to(device)).float()
    return total.item() / len(batches)


def flops_per_token(model: nn.Module, size: Size) -> float:
    """nanoGPT's estimate_mfu count: 6 · N + 12 · L · T · d, N = the weights of every nn.Linear (the head included)."""
    matrices = {id(m.weight): m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear)}
    return 6 * sum(matrices.values()) + 12 * size.n_layer * size.block_size * size.n_embd


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class Side:
    name: str
    seconds: float = 0.0  # wall-clock time of its training steps
    cpu_seconds: float = 0.0  # the process's CPU time during them (steadier than wall time on a loaded machine)
    curve: list[tuple[int, float]] = field(default_factory=list)  # (step, validation loss)

    @property
    def best(self) -> tuple[float, int]:
        loss, step = min((loss, step) for step, loss in self.curve)
        return loss, step


def timed_apart(trainer: Trainer, device: torch.device) -> Side:
    """Time the Trainer's own evaluations (its loop evaluates at its last step) on a side of their own, so that
    they can be left out of its training time: the reference's training time has no evaluation in it."""
    evaluations = Side("llmviz's own evaluation")
    evaluate = trainer.evaluate

    def evaluate_timed(*args, **kwargs) -> float:
        sync(device)
        start, cpu_start = time.perf_counter(), time.process_time()
        loss = evaluate(*args, **kwargs)
        sync(device)
        evaluations.seconds += time.perf_counter() - start
        evaluations.cpu_seconds += time.process_time() - cpu_start
        return loss

    trainer.evaluate = evaluate_timed  # type: ignore[method-assign]
    return evaluations


@dataclass
class Result:
    size_name: str
    size: Size
    device: str
    device_name: str
    precision: str
    steps: int
    sides: list[Side]
    flops: list[float]
    wall: Rounds = field(default_factory=Rounds)  # each side's seconds in every turn, in order
    cpu: Rounds = field(default_factory=Rounds)  # and its CPU-seconds
    load_before: str = ""

    def tokens_per_s(self, index: int) -> float:
        return self.steps * self.size.batch_size * self.size.block_size / self.sides[index].seconds

    def rate(self, reference: str = SHIPPED) -> float:
        """llmviz's step rate over ``reference``'s: the median over the rounds (a turn of each side) of the
        reference's time over llmviz's for the same steps, the first round left out (each side's first steps)."""
        return self.wall.median(reference, self.sides[0].name)

    def equal_terms(self) -> str | None:
        """The side with llmviz's AdamW kernel: the reference as shipped where the kernels are already the same."""
        names = [side.name for side in self.sides]
        return EQUAL if EQUAL in names else SHIPPED if len(names) == 2 else None

    def rate_line(self) -> str:
        ours = self.sides[0].name
        lines = []
        for side in self.sides[1:]:
            what = "as nanoGPT ships it" if side.name == SHIPPED else "on equal terms (the same AdamW kernel)"
            lines.append(
                f"llmviz's step rate over the reference's {what}, per round of {self.size.log_interval} steps each: "
                f"wall-clock {self.wall.summary(side.name, ours)}; CPU time {self.cpu.summary(side.name, ours)}"
            )
        return "\n\n".join(lines)


def compare(
    size_name: str,
    text: str,
    device: str,
    steps: int | None = None,
    seed: int = 1337,
    compile_model: bool = False,
    progress=lambda line: print(line, flush=True),
) -> Result:
    """Train both sides in turns of ``log_interval`` steps (the side that goes first alternating, so that a change
    in the machine's load falls on both), measure both at every ``eval_interval``."""
    size = SIZES[size_name]
    if steps is not None:
        size = dataclasses.replace(size, max_iters=steps)
    on_cuda = device.startswith("cuda")
    precision = ("bf16" if torch.cuda.is_bf16_supported() else "fp16") if on_cuda else "float32"
    trainer = llmviz_trainer(size, text, device, precision, seed, compile_model)
    dataset = trainer.dataset
    references = {SHIPPED: Reference(size, dataset.vocab_size, dataset.train_ids, device, precision, seed)}
    ours_fused = bool(trainer.optimizer.defaults.get("fused"))
    if ours_fused != references[SHIPPED].fused:  # the same AdamW kernel as llmviz's: a side of its own (issue 71 §3)
        references[EQUAL] = Reference(size, dataset.vocab_size, dataset.train_ids, device, precision, seed, ours_fused)
    batches = validation_windows(dataset.val_ids, size, seed)
    torch_device = torch.device(device)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    ours = Side("llmviz Trainer")
    ref_sides = {name: Side(name) for name in references}
    evaluations = timed_apart(trainer, torch_device)
    wall, cpu, load_before = Rounds(), Rounds(), load_average()
    interval = size.eval_interval

    def advance(count: int) -> None:
        for _ in range(count):
            next(steps_of_llmviz)

    steps_of_llmviz = trainer.run(report_at=lambda step: step % size.log_interval == 0)
    done = 0
    while done < size.max_iters:
        chunk_end = min(done + interval, size.max_iters)
        while done < chunk_end:  # turns of log_interval steps, the side that goes first taking turns
            turn = min(size.log_interval, chunk_end - done)
            sides = [(ref_sides[name], lambda n=turn, r=ref: r.train_steps(n)) for name, ref in references.items()]
            sides.append((ours, lambda n=turn: advance(n)))
            first = (done // size.log_interval) % len(sides)
            for side, train in sides[first:] + sides[:first]:
                apart, cpu_apart = evaluations.seconds, evaluations.cpu_seconds
                sync(torch_device)
                start, cpu_start = time.perf_counter(), time.process_time()
                train()
                sync(torch_device)
                # the training steps' time, without the Trainer's own evaluation (none in the reference's turns)
                seconds = time.perf_counter() - start - (evaluations.seconds - apart)
                cpu_seconds = time.process_time() - cpu_start - (evaluations.cpu_seconds - cpu_apart)
                side.seconds += seconds
                side.cpu_seconds += cpu_seconds
                if done and turn == size.log_interval:  # whole rounds after the first (each side's first steps)
                    wall.add(side.name, seconds)
                    cpu.add(side.name, cpu_seconds)
            done += turn
        for name, reference in references.items():
            reference.model.eval()
            ref_sides[name].curve.append((done, validation_loss(reference.model, batches, torch_device, dtype)))
        trainer.model.eval()
        ours.curve.append((done, validation_loss(lambda x, y: trainer.model(x, y)[1], batches, torch_device, dtype)))
        trainer.model.train()
        shipped = ref_sides[SHIPPED]
        progress(
            f"step {done:>5}: validation loss reference {shipped.curve[-1][1]:.4f}, llmviz {ours.curve[-1][1]:.4f} "
            f"({shipped.seconds:.1f} s vs {ours.seconds:.1f} s of training so far)"
        )
    device_name = torch.cuda.get_device_name(torch_device) if on_cuda else cpu_name()
    return Result(
        size_name,
        size,
        device,
        device_name,
        precision,
        size.max_iters,
        [ours, *ref_sides.values()],
        [flops_per_token(trainer.model, size), *(flops_per_token(r.model, size) for r in references.values())],
        wall,
        cpu,
        load_before,
    )


def cpu_name() -> str:
    """The CPU's model name (Linux), else what platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def budgets(result: Result) -> list[tuple[str, bool]]:
    ours_best, ref_best = result.sides[0].best[0], result.sides[1].best[0]
    rate = (f"step rate {result.rate():.2f}× the reference's as shipped (median round) ≥ 1.0×", result.rate() >= 1.0)
    if result.size_name == "full" and result.device.startswith("cuda"):
        return [(f"best validation loss {ours_best:.4f} ≤ 1.47", ours_best <= 1.47), rate]
    lines = [
        (
            f"best validation loss {ours_best:.4f} within 1 % of the reference's {ref_best:.4f}",
            abs(ours_best - ref_best) <= 0.01 * ref_best,
        ),
        rate,
    ]
    equal = result.equal_terms()
    if equal is not None:
        ratio = result.rate(equal)
        lines.append(
            (
                f"step rate {ratio:.2f}× the reference's on equal terms, the same AdamW kernel (median round) "
                f"≥ {EQUAL_TERMS_TARGET}×",
                ratio >= EQUAL_TERMS_TARGET,
            )
        )
    return lines


def table(result: Result) -> str:
    lines = [
        "| | best validation loss (at step) | at the last step | tokens/s | TFLOP/s | CPU-seconds |",
        "|---|---|---|---|---|---|",
    ]
    for index, side in enumerate(result.sides):
        best, at = side.best
        tokens = result.tokens_per_s(index)
        lines.append(
            f"| {side.name} | {best:.4f} ({at:,}) | {side.curve[-1][1]:.4f} | {tokens:,.0f} | "
            f"{tokens * result.flops[index] / 1e12:.3g} | {side.cpu_seconds:.1f} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------- the text and the record


def shakespeare(path: str | None) -> str:
    """Tiny Shakespeare: from ``path`` (checked against the registry's sha256 and copied into the corpus cache, as
    a download would be) or from the cache."""
    entry = corpus.REGISTRY["tinyshakespeare"]
    if path is not None:
        data = Path(path).read_bytes()
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            raise CorpusUnavailable(f"{path} is not the Tiny Shakespeare llmviz pins (its sha256 differs).")
        target = corpus.cached_path("tinyshakespeare")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return corpus.load("tinyshakespeare", download_if_missing=path is None)


def machine_line(result: Result) -> str:
    load = f"{result.load_before} at the start, {load_average()} at the end"
    threads = torch.get_num_threads()
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return (
        f"{result.device_name} ({result.device}, {result.precision}; torch {torch.__version__}, {threads} CPU "
        f"threads), load average {load}, commit {commit}"
    )


def record(result: Result, budget_lines: list[tuple[str, bool]]) -> None:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    size = result.size
    entry = [
        f"## {when}: {result.size_name} size, {result.steps:,} steps",
        "",
        f"{machine_line(result)}. L{size.n_layer} H{size.n_head} d{size.n_embd} T{size.block_size} "
        f"B{size.batch_size}, dropout {size.dropout}, validation every {size.eval_interval} steps over "
        f"{size.eval_iters} batches.",
        "",
        table(result),
        "",
        result.rate_line(),
        "",
        *[f"- {'PASS' if ok else 'FAIL'}: {line}" for line, ok in budget_lines],
        "",
    ]
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    if not RECORD.exists():
        RECORD.write_text(
            "# llmviz's Trainer against a nanoGPT-style reference\n\n"
            "Dated results of `benchmarks/nanogpt.py` (new runs are appended; the script's docstring says what is "
            "compared and how).\n\n"
        )
    with RECORD.open("a") as file:
        file.write("\n" + "\n".join(entry) + "\n")  # a blank line after the previous entry's notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=["auto", *SIZES], default="auto", help="auto: full on CUDA, cpu otherwise")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--steps", type=int, default=None, help="default: the size's (5,000 full, 300 cpu)")
    parser.add_argument("--text", default=None, help="a copy of Tiny Shakespeare (when it is not in the cache)")
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--compile", action="store_true", help="torch.compile llmviz's model (the reference is not)")
    parser.add_argument("--record", action="store_true", help=f"append the result to {RECORD.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    from llmviz.device import pick_device

    device = pick_device(args.device)
    size_name = args.size if args.size != "auto" else ("full" if device.startswith("cuda") else "cpu")
    text = shakespeare(args.text)
    result = compare(size_name, text, device, args.steps, args.seed, args.compile)
    print()
    print(machine_line(result))
    print(table(result))
    print(result.rate_line())
    lines = budgets(result)
    for line, ok in lines:
        print(f"{'PASS' if ok else 'FAIL'}: {line}")
    if args.record:
        record(result, lines)
    return 0 if all(ok for _, ok in lines) else 1


if __name__ == "__main__":
    raise SystemExit(main())
