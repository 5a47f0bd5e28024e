#!/usr/bin/env bash
# Re-create the models shipped in data/ with llmviz's own CLI (each checkpoint.json records its command).
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1  # the numbers in data/README.md come from one CPU thread; more threads change the last digits
# --stride = the context: the shipped models trained on windows side by side (stride 1, a window at every position,
# became the default later; it trains better models, but not these ones)
python -m llmviz train --corpus python-docs --model gpt-mini --tokenizer bpe --vocab-size 1024 --context 128 \
  --stride 128 --batch 16 --steps 1000 --lr 3e-3 --warmup 50 --dropout 0.1 --weight-decay 0.1 --eval-interval 50 --seed 1337 --device cpu --weights-only \
  --out data/gpt-python-docs
for model in bigram-counts bigram-neural mlp wavenet rnn gru transformer; do
  lr=3e-3; [ "$model" = bigram-neural ] && lr=1e-1
  python -m llmviz train --corpus names --model "$model" --tokenizer char --context 16 --stride 16 --batch 32 \
    --steps 2000 --lr "$lr" --warmup 20 --eval-interval 200 --seed 1337 --device cpu --weights-only \
    --out "data/names-$model"
done
python scripts/summarise_shipped_models.py > data/README.md
