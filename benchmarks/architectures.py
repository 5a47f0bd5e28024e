"""Training step time per architecture switch: llmviz's GPT vs Hugging Face transformers with the same config.

    python benchmarks/architectures.py [--steps 20] [--device cpu]

One shape for every row (L4 H8 d256 T128 B8 V4096, dropout 0): GPT-2 first, then one switch
flipped at a time (each row keeps the flips above, as the Model page's "GPT-2 → Llama" table),
then Qwen2's and Mixtral's choices. Where transformers has the same architecture the row also
times it: GPT2LMHeadModel for GPT-2, LlamaForCausalLM for the Llama-shaped rows,
Qwen2ForCausalLM and MixtralForCausalLM (all with SDPA attention). A step is forward, loss,
backward and an AdamW update on the same batches. The two sides of a row step in rounds of one step each, the side
that goes first alternating (``benchmarks/_rounds.py``): ms/step is each side's median step, the ratio (llmviz's time
over transformers') the median per-round ratio, printed with its spread, and the load average at the end.
"""

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from _rounds import Rounds, load_average  # noqa: E402 - this folder is on sys.path

from llmviz.hub.llama import config_to_hf  # noqa: E402
from llmviz.models.gpt import GPT, GPTConfig  # noqa: E402

BASE = GPTConfig(
    vocab_size=4096,
    context_length=128,
    d_model=256,
    n_heads=8,
    n_layers=4,
    dropout=0.0,
    qkv_bias=True,
    tie_weights=True,
)
ROWS = [
    ("GPT-2", {}),
    ("+ RoPE", dict(positions="rope")),
    ("+ RMSNorm", dict(norm="rmsnorm")),
    ("+ SwiGLU (8/3·d)", dict(mlp_kind="swiglu", d_mlp=704)),
    ("+ no biases", dict(bias=False, qkv_bias=False)),
    ("+ GQA (2 kv heads)", dict(n_kv_heads=2)),
    ("+ untied head = Llama", dict(tie_weights=False)),
    ("Qwen2 (qkv bias, tied)", dict(qkv_bias=True, tie_weights=True)),
    ("Mixtral (4 experts, top 2)", dict(qkv_bias=False, tie_weights=False, n_experts=4, experts_top_k=2)),
]


def hf_twin(config: GPTConfig):
    """transformers' model of the same architecture, or None when transformers has none."""
    import transformers

    if config == BASE:
        hf = transformers.GPT2Config(
            vocab_size=config.vocab_size,
            n_positions=config.context_length,
            n_embd=config.d_model,
            n_layer=config.n_layers,
            n_head=config.n_heads,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            bos_token_id=0,
            eos_token_id=0,
        )
        hf._attn_implementation = "sdpa"
        return transformers.GPT2LMHeadModel(hf)
    try:
        settings = config_to_hf(config)
    except Exception:  # noqa: BLE001 - not Llama-shaped yet: no twin
        return None
    kind = settings.pop("model_type")
    if kind == "llama" and config.tie_weights:
        return None  # only the rows where every switch is Llama's are timed against Llama
    theta = settings.pop("rope_theta")
    classes = {
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
        "mixtral": (transformers.MixtralConfig, transformers.MixtralForCausalLM),
    }
    config_class, model_class = classes[kind]
    hf = config_class(**settings, attention_dropout=0.0)
    if kind == "mixtral":
        hf.output_router_logits = True  # transformers then adds the load-balancing loss, as llmviz does in training
    hf.rope_parameters = {"rope_type": "default", "rope_theta": theta}
    hf._attn_implementation = "sdpa"
    return model_class(hf)


def stepper(model, batches, hf: bool):
    """A function that takes the model's next training step on ``batches`` and returns its seconds."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()
    steps = iter(batches)

    def step() -> float:
        inputs, targets = next(steps)
        start = time.perf_counter()
        if hf:
            loss = model(input_ids=inputs, labels=targets).loss
        else:
            _, loss = model(inputs, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return time.perf_counter() - start

    return step


def rounds_of(sides: dict, count: int) -> Rounds:
    """Each side's steps in rounds of one step each, the side that goes first alternating, after 3 warm-up steps."""
    for step in sides.values():
        for _ in range(3):
            step()
    found = Rounds()
    for index in range(count):
        for name in list(sides) if index % 2 == 0 else list(sides)[::-1]:
            found.add(name, sides[name]())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    ids = [
        torch.randint(0, BASE.vocab_size, (args.batch, BASE.context_length + 1), generator=generator)
        for _ in range(args.steps + 3)
    ]
    ours_batches = [(x[:, :-1], x[:, 1:]) for x in ids]  # llmviz: targets already shifted
    hf_batches = [(x[:, :-1], x[:, :-1]) for x in ids]  # transformers shifts the labels itself
    print(
        f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC · {platform.processor() or platform.machine()} · "
        f"torch {torch.__version__} · {torch.get_num_threads()} threads · steps {args.steps} · "
        f"L{BASE.n_layers} H{BASE.n_heads} d{BASE.d_model} T{BASE.context_length} B{args.batch} V{BASE.vocab_size}"
    )
    print(f"{'architecture':30} {'parameters':>11} {'llmviz ms/step':>15} {'transformers ms/step':>21} {'ratio':>6}")
    config = BASE
    for title, switches in ROWS:
        config = config.replace(**switches)
        torch.manual_seed(0)
        ours = GPT(config)
        sides = {"llmviz": stepper(ours, ours_batches, hf=False)}
        twin = hf_twin(config)
        if twin is not None:
            assert twin.num_parameters() == ours.num_parameters(), title
            sides["transformers"] = stepper(twin, hf_batches, hf=True)
        rounds = rounds_of(sides, args.steps)
        ours_ms = 1000 * statistics.median(rounds.seconds["llmviz"])
        if twin is not None:
            hf_ms = 1000 * statistics.median(rounds.seconds["transformers"])
            ratio = rounds.median("llmviz", "transformers")  # llmviz's time over transformers', per round
            print(
                f"{title:30} {ours.num_parameters():>11,} {ours_ms:>15.1f} {hf_ms:>21.1f} {ratio:>6.2f}"
                f"   {rounds.summary('llmviz', 'transformers')}",
                flush=True,
            )
        else:
            print(f"{title:30} {ours.num_parameters():>11,} {ours_ms:>15.1f} {'—':>21} {'':>6}", flush=True)
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()
