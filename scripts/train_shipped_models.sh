#!/usr/bin/env bash
# Re-create the models shipped in data/ with llmviz's own CLI (each checkpoint.json records its command).
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1  # the numbers in data/README.md come from one CPU thread; more threads change the last digits
# the shipped GPT: gpt-mini's shapes with the output head tied to the token embedding, and a 4,096-token BPE, big
# enough that the manual's common words are one token each; trained on the manual with its paragraphs unwrapped (its
# hard line breaks every ~70 characters would be learnt as a word boundary like any other: the model would end
# sentences with a line break). tests/project/test_shipped_models.py checks all three. --stride = the context: the shipped models
# trained on windows side by side (stride 1, a window at every position, became the default later)
python -c "from llmviz.data.corpus import load, unwrap_paragraphs; import pathlib; \
pathlib.Path('data/python-manual.txt').write_text(unwrap_paragraphs(load('python-docs')), encoding='utf-8')"
python -m llmviz train --corpus data/python-manual.txt --model gpt-mini --tokenizer bpe --vocab-size 4096 \
  --context 128 --stride 128 --arch tie_weights=true --batch 16 --steps 1000 --lr 3e-3 --warmup 50 --dropout 0.2 \
  --weight-decay 0.1 --eval-interval 50 --seed 1337 --device cpu --weights-only --out data/gpt-python-docs
# the char transformer also keeps its weights at seven earlier steps (steps/, float16, 1.5 MB): the app's step
# slider replays it across training at once (its model.safetensors is the same with or without them)
for model in bigram-counts bigram-neural mlp wavenet rnn gru transformer; do
  lr=3e-3; [ "$model" = bigram-neural ] && lr=1e-1
  keep=(); [ "$model" = transformer ] && keep=(--keep-steps 0,10,50,100,200,500,1000)
  python -m llmviz train --corpus names --model "$model" --tokenizer char --context 16 --stride 16 --batch 32 \
    --steps 2000 --lr "$lr" --warmup 20 --eval-interval 200 --seed 1337 --device cpu --weights-only \
    "${keep[@]}" --out "data/names-$model"
done
# the tuned pair of the shipped GPT (the Tuning page opens on them): instruction tuning on the manual's questions
# (scripts/make_instructions.py writes data/instructions/), then DPO from it; weights kept as float16 (half the size)
python scripts/make_instructions.py
python -m llmviz sft --init data/gpt-python-docs --steps 60 --batch 16 --lr 1e-3 --eval-interval 10 --seed 1337 \
  --half --overwrite --out data/gpt-python-docs-sft
python -m llmviz dpo --init data/gpt-python-docs-sft --beta 0.1 --steps 40 --batch 8 --lr 1e-4 --eval-interval 10 \
  --seed 1337 --half --overwrite --out data/gpt-python-docs-dpo
python scripts/summarise_shipped_models.py > data/README.md
