"""Print data/README.md: each shipped checkpoint with its command and final losses."""

import json
import math
from pathlib import Path

root = Path(__file__).resolve().parent.parent / "data"
print("# Shipped artifacts\n")
print(
    "Produced by llmviz's own CLI (`scripts/train_shipped_models.sh`); weights in safetensors, "
    "configuration, tokenizer and training metrics in `checkpoint.json`.\n"
)
print(
    "Optimizer: AdamW with nanoGPT's parameter groups: weight decay on every parameter with two or more "
    "dimensions (weight matrices and embeddings), none on biases and LayerNorm scales and shifts. "
    "Trained on the CPU with one thread (`OMP_NUM_THREADS=1`); another thread count can change the last "
    "digits.\n"
)
print("| folder | model | parameters | size | steps | final train loss | final validation loss |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for folder in sorted(p for p in root.iterdir() if (p / "checkpoint.json").exists()):
    meta = json.loads((folder / "checkpoint.json").read_text())
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        parameters = sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())
    size = sum(p.stat().st_size for p in folder.iterdir())
    final = meta["final"]
    print(
        f"| `{folder.name}` | {meta['train_config']['model']} | {parameters:,} | {size / 1e6:.2f} MB | "
        f"{meta['step']} | {final['train_loss']:.4f} | {final['val_loss']:.4f} |"
    )
print("\nCommands:\n")
for folder in sorted(p for p in root.iterdir() if (p / "checkpoint.json").exists()):
    meta = json.loads((folder / "checkpoint.json").read_text())
    print(f"- `{folder.name}`: `{meta.get('command', '?')}`")
