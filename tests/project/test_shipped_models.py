"""The artifacts in data/: they load, and their recorded numbers can be recomputed."""

import json
import math

import pytest
import torch
import torch.nn.functional as F

from llmviz.data import corpus
from llmviz.generation.sampling import generate_from_prompt, generate_text
from llmviz.training.checkpoint import load_checkpoint
from llmviz.training.config import TrainConfig
from tests.support.paths import DATA

FOLDERS = sorted(
    p for p in DATA.iterdir() if (p / "checkpoint.json").exists() and not p.name.endswith(("-sft", "-dpo"))
)  # the tuned pair (SFT, DPO) is checked by tests/unit/lessons/test_tuning.py


def corpus_text(name: str) -> str:
    """The text a checkpoint was trained on: a registered corpus, or a file of the repository (the shipped GPT's
    data/python-manual.txt)."""
    if name in corpus.REGISTRY:
        return corpus.load(name)
    return (DATA.parent / name).read_text(encoding="utf-8")


def test_the_expected_artifacts_are_shipped():
    names = {p.name for p in FOLDERS}
    assert "gpt-python-docs" in names
    for model in ("bigram-counts", "bigram-neural", "mlp", "wavenet", "rnn", "gru", "transformer"):
        assert f"names-{model}" in names
    for folder in FOLDERS:
        size = sum(f.stat().st_size for f in folder.iterdir())
        assert size < 6 * 2**20, f"{folder.name} is {size / 2**20:.1f} MB"
        assert not list(folder.glob("*.pt")) and not list(folder.glob("*.bin")), "safetensors only"
    everything = sum(f.stat().st_size for f in DATA.rglob("*") if f.is_file())
    assert everything < 20 * 2**20, f"data/ holds {everything / 2**20:.1f} MB"  # the repository stays small


def validation_loss_recomputed(model, tokenizer, text: str, config: TrainConfig) -> float:
    """The validation loss, recomputed here without the trainer: the last ``val_fraction`` of the text's tokens,
    the same fixed windows the trainer evaluates on (starts every ``stride`` tokens, drawn by a generator seeded
    with ``seed + 2``), the model's logits, and torch's own cross-entropy in float64. A BPE text is encoded by
    tiktoken with the same merges (faster, and another implementation)."""
    if hasattr(tokenizer, "to_tiktoken"):
        ids = tokenizer.to_tiktoken().encode(text, disallowed_special=())  # special-token text stays ordinary
    else:
        ids = tokenizer.encode(text)
    ids = torch.tensor(ids, dtype=torch.long)
    val = ids[int(len(ids) * (1 - config.val_fraction)) :]
    context, stride = config.context_length, config.stride or config.context_length
    starts = torch.arange(0, len(val) - context, stride)
    generator = torch.Generator().manual_seed(config.seed + 2)
    losses = []
    with torch.no_grad():
        for _ in range(config.eval_batches):
            chosen = starts[torch.randint(len(starts), (config.batch_size,), generator=generator)]
            positions = chosen[:, None] + torch.arange(context)  # (B, T)
            logits, _ = model(val[positions])  # (B, T, V)
            targets = val[positions + 1]  # (B, T): the next token of every position
            losses.append(float(F.cross_entropy(logits.double().flatten(0, 1), targets.flatten())))
    return sum(losses) / len(losses)


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_recorded_validation_loss_is_recomputed(folder):
    model, tokenizer, meta = load_checkpoint(folder)
    config = TrainConfig.from_dict(meta["train_config"])
    assert meta["command"].startswith("python -m llmviz train") and f"--out data/{folder.name}" in meta["command"]
    text = corpus_text(meta["corpus"])
    recomputed = validation_loss_recomputed(model.eval(), tokenizer, text, config)
    # python-docs is Python's own manual (pydoc_data.topics), which changes between Python releases (3.11.2 and
    # 3.11.7 differ by ~1 KB): on the very text it was trained on the recorded loss is recomputed exactly; on
    # another release's manual the validation split differs a little, and so does the loss
    same_text = meta["corpus_sha256"] == corpus.sha256_hex(text.encode("utf-8"))
    assert meta["final"]["val_loss"] == pytest.approx(recomputed, abs=1e-4 if same_text else 0.1)
    # and the model is better than a uniform guess over its vocabulary
    assert recomputed < math.log(tokenizer.vocab_size) - 0.5


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_every_shipped_model_generates(folder):
    model, tokenizer, meta = load_checkpoint(folder)
    prompt = "emma\nol" if meta["corpus"] == "names" else "The for statement"
    # more tokens than any window of a names model (bigram 1, MLP 3, WaveNet 8, transformer 16): past a shift
    result = generate_from_prompt(model, tokenizer, prompt, max_new_tokens=40, temperature=0.8, seed=1)
    assert len(result.records) == 40 and result.new_text  # the generated part, not the echoed prompt
    assert result.text == prompt + result.new_text and not result.prompt.dropped
    assert all(0 <= r.token < tokenizer.vocab_size and 0 < r.probability <= 1 for r in result.records)
    if meta["corpus"] == "names":
        assert set(result.new_text) <= set(tokenizer.chars)
    greedy = generate_text(model, tokenizer, prompt, max_new_tokens=20, temperature=0.0)
    assert greedy.startswith(prompt) and len(greedy) > len(prompt)
    assert greedy == generate_text(model, tokenizer, prompt, max_new_tokens=20, temperature=0.0, seed=99)


def test_shipped_names_models_write_names():
    model, tokenizer, _ = load_checkpoint(DATA / "names-transformer")
    names = generate_text(model, tokenizer, "", max_new_tokens=60, temperature=0.8, seed=1)
    assert names.count("\n") >= 3 and set(names) <= set(tokenizer.chars)  # several names, one per line


def test_data_readme_lists_every_artifact():
    readme = (DATA / "README.md").read_text()
    for folder in FOLDERS:
        meta = json.loads((folder / "checkpoint.json").read_text())
        assert f"`{folder.name}`" in readme and f"{meta['final']['val_loss']:.4f}" in readme


@pytest.mark.parametrize(
    "folder",
    [p for p in FOLDERS if p.name != "names-bigram-counts"],
    ids=[p.name for p in FOLDERS if p.name != "names-bigram-counts"],
)
def test_shipped_models_were_trained_without_decay_on_biases_and_layernorm(folder):
    model, _, meta = load_checkpoint(folder)
    assert meta["train_config"]["optimizer"] == "adamw"
    decay = meta["train_config"]["weight_decay"]
    parameters = [p for p in model.parameters() if p.requires_grad]
    decayed = {i for g in meta["optimizer_param_groups"] if g["weight_decay"] == decay for i in g["params"]}
    plain = {i for g in meta["optimizer_param_groups"] if g["weight_decay"] == 0.0 for i in g["params"]}
    # the optimizer numbers parameters group by group: matrices (dim >= 2) first, then the rest
    matrices = sum(1 for p in parameters if p.dim() >= 2)
    assert decayed == set(range(matrices)) and plain == set(range(matrices, len(parameters)))


def induction_figures() -> tuple[str, float]:
    """The sentence README and docs/models.md state about the shipped GPT's induction scores, recomputed (with the
    highest score); the even-spread reference is written out by hand (query q of the repeated half puts 1/(q+1) on
    the one key the detector wants)."""
    from llmviz.interpret import heads

    model, _, _ = load_checkpoint(DATA / "gpt-python-docs")
    _, scores = heads.model_head_scores(model.eval(), half_length=20, seed=0)
    induction = scores["induction"]  # (layers, heads)
    layer, head = divmod(int(induction.argmax()), induction.shape[1])
    rest = torch.cat(
        [
            induction.flatten()[: layer * induction.shape[1] + head],
            induction.flatten()[layer * induction.shape[1] + head + 1 :],
        ]
    )
    even = sum(1 / (query + 1) for query in range(20, 40)) / 20
    sentence = (
        f"its highest induction score is {float(induction.max()):.3f} (layer {layer} head {head}), every other "
        f"head's at most {float(rest.max()):.3f}, where attention spread evenly over the visible tokens scores "
        f"{even:.3f}"
    )
    return sentence, float(induction.max())


def test_the_shipped_gpts_induction_scores_are_stated_as_computed():
    """docs/models.md states them (README's pages section links there: the figures are checked in one place)."""
    sentence, highest = induction_figures()
    docs = (DATA.parent / "docs" / "models.md").read_text(encoding="utf-8")
    assert sentence in " ".join(docs.split())
    said = "has no induction head" if highest < 0.1 else "has an induction head"  # one scores 0.3 and more
    assert f"The shipped GPT {said}" in " ".join(docs.split())


SENTENCES = [  # sentences of the manual's training part (its first 90 %), each followed there by a word
    'The "for" statement is used to',
    'The "while" statement is used for',
    'The "with" statement is used to',
    'The "if" statement is used for',
    'The "try" statement specifies',
    "Assert statements are a convenient way to",
]


def top_token(model, tokenizer, text: str) -> str:
    with torch.no_grad():
        return tokenizer.decode([int(model.eval()(torch.tensor([tokenizer.encode(text)]))[0][0, -1].argmax())])


def test_the_shipped_gpt_continues_sentences_of_its_manual_with_a_word():
    """After sentences of the manual that go on with a word, the model's most likely token is never a line break or
    a space (the manual's hard line breaks, unwrapped, no longer teach it one), and nearly always a word; after the
    sentence the pages' issue quotes as well."""
    model, tokenizer, meta = load_checkpoint(DATA / "gpt-python-docs")
    text = corpus_text(meta["corpus"])
    tops = []
    for sentence in SENTENCES:
        start = text.index(sentence)
        assert start < 0.9 * len(text) and text[start + len(sentence)] == " "  # trained on; a word comes next
        tops.append(top_token(model, tokenizer, sentence))
    assert all(top.strip() for top in tops), tops
    assert sum(top.strip().isalpha() for top in tops) >= len(SENTENCES) - 1, tops
    assert top_token(model, tokenizer, "The for statement is used to").strip().isalpha()


def held_out_losses(model, tokenizer, text: str) -> dict[str, float]:
    """Mean next-token loss on the text's last 10 % of tokens (the trainer's validation split: topics the model never
    read) for the model, and for counting on the first 90 %: each token's frequency (add-one), and the best of
    add-k bigrams (k = 0.01 … 1)."""
    import collections

    ids = tokenizer.to_tiktoken().encode(text, disallowed_special=())
    cut = int(len(ids) * 0.9)
    train, held = ids[:cut], ids[cut:]
    vocabulary = tokenizer.vocab_size
    unigrams, bigrams = collections.Counter(train), collections.Counter(zip(train, train[1:], strict=False))
    pairs = list(zip(held, held[1:], strict=False))
    unigram = -sum(math.log((unigrams[b] + 1) / (len(train) + vocabulary)) for _, b in pairs) / len(pairs)
    bigram = min(
        -sum(math.log((bigrams[(a, b)] + k) / (unigrams[a] + k * vocabulary)) for a, b in pairs) / len(pairs)
        for k in (0.01, 0.03, 0.1, 0.3, 1.0)
    )
    context = model.config.context_length
    windows = torch.tensor(held[: len(held) // (context + 1) * (context + 1)]).view(-1, context + 1)
    with torch.no_grad():
        logits, _ = model.eval()(windows[:, :-1])
    ours = float(F.cross_entropy(logits.double().flatten(0, 1), windows[:, 1:].flatten()))
    return {"model": ours, "unigram": unigram, "bigram": bigram}


def test_the_shipped_gpt_beats_counting_on_text_it_never_read():
    """On the manual's last 10 % the model predicts better than token counts and the best bigram counts of the first
    90 % (an overfitted model does worse than both); docs/models.md states the three numbers."""
    model, tokenizer, meta = load_checkpoint(DATA / "gpt-python-docs")
    losses = held_out_losses(model, tokenizer, corpus_text(meta["corpus"]))
    assert losses["model"] < losses["bigram"] < losses["unigram"], losses
    docs = " ".join((DATA.parent / "docs" / "models.md").read_text(encoding="utf-8").split())
    assert (
        f"its loss is {losses['model']:.2f} per token, where the best bigram counts of the rest give "
        f"{losses['bigram']:.2f} and token frequencies {losses['unigram']:.2f}"
    ) in docs


def common_words(text: str, count: int = 200) -> list[str]:
    """The ``count`` most common words (runs of letters) of a text."""
    import collections

    import regex

    return [word for word, _ in collections.Counter(regex.findall(r"[A-Za-z]+", text)).most_common(count)]


def whole_share(tokenizer, words: list[str]) -> float:
    """The share of ``words`` that, as they stand in running text (after a space), are one token."""
    return sum(len(tokenizer.encode(" " + word)) == 1 for word in words) / len(words)


def test_the_shipped_gpt_keeps_the_manuals_common_words_whole():
    """Its BPE (4,096 tokens) keeps nearly all of the manual's 200 most common words whole; the 1,024-token BPE the
    same trainer makes of the manual (what was shipped before, merge for merge) splits far more. docs/models.md states
    both."""
    from llmviz.tokenizers.bpe.tokenizer import BPETokenizer

    _, tokenizer, meta = load_checkpoint(DATA / "gpt-python-docs")
    text = corpus_text(meta["corpus"])
    words = common_words(text)
    after = whole_share(tokenizer, words)
    before = whole_share(BPETokenizer.train(corpus.load("python-docs"), 1024), words)
    assert after >= 0.95 and after - before >= 0.1, (before, after)
    docs = " ".join((DATA.parent / "docs" / "models.md").read_text(encoding="utf-8").split())
    assert f"{after:.1%} of the manual's 200 most common words are one token" in docs
    assert f"{before:.1%} with the 1,024-token BPE shipped before" in docs


def test_the_shipped_gpt_is_what_the_script_trains():
    """checkpoint.json's command is the one scripts/train_shipped_models.sh runs."""
    import shlex

    script = (DATA.parent / "scripts" / "train_shipped_models.sh").read_text(encoding="utf-8").replace("\\\n", " ")
    line = next(line for line in script.splitlines() if "--out data/gpt-python-docs" in line)
    meta = json.loads((DATA / "gpt-python-docs" / "checkpoint.json").read_text())
    assert shlex.split(meta["command"]) == shlex.split(line)


def test_the_shipped_gpts_text_is_the_manual_with_its_paragraphs_unwrapped():
    """data/python-manual.txt is unwrap_paragraphs of the built-in manual (pydoc_data.topics, which changes a little
    between Python releases: on another release nearly all its lines are still the manual's); no prose line of it is
    cut at the manual's ~70 characters any more."""
    from llmviz.data.corpus import unwrap_paragraphs

    meta = json.loads((DATA / "gpt-python-docs" / "checkpoint.json").read_text())
    shipped = corpus_text(meta["corpus"])
    here = unwrap_paragraphs(corpus.load("python-docs"))
    if shipped != here:
        lines, ours = shipped.splitlines(), set(here.splitlines())
        assert sum(line in ours for line in lines) >= 0.99 * len(lines)
    assert 'The "for" statement is used to iterate over the elements of a sequence (such as a string,' in shipped
    assert shipped.count("\n") < 0.7 * corpus.load("python-docs").count("\n")


def test_the_shipped_transformers_kept_steps_are_its_training():
    """data/names-transformer/steps/ (issue 58: a shipped model's steps work at once): its step 0 is the model as the
    recorded command initialises it (seed 1337, built here by the trainer), and the steps whose validation loss the
    checkpoint recorded give that loss again from their float16 weights (recomputed by hand, as above)."""
    from safetensors.torch import load_file

    from llmviz.training.checkpoint_steps import STEP_DTYPE, saved_steps, step_file
    from llmviz.training.trainer import Trainer

    folder = DATA / "names-transformer"
    model, tokenizer, meta = load_checkpoint(folder)
    config = TrainConfig.from_dict({**meta["train_config"], "stride": 16})  # the script's --stride (see data/README)
    assert saved_steps(folder) == [0, 10, 50, 100, 200, 500, 1000]
    fresh = Trainer.from_text(corpus_text(meta["corpus"]), config).model.state_dict()
    kept = load_file(str(step_file(folder, 0)))
    assert kept.keys() == fresh.keys()
    for name, tensor in fresh.items():
        assert torch.equal(kept[name], tensor.to(STEP_DTYPE)), name
    recorded = {m["step"]: m["val_loss"] for m in meta["metrics"] if m.get("val_loss") is not None}
    text = corpus_text(meta["corpus"])
    for step in (200, 1000):
        model.load_state_dict({name: t.float() for name, t in load_file(str(step_file(folder, step))).items()})
        again = validation_loss_recomputed(model.eval(), tokenizer, text, config)
        assert again == pytest.approx(recorded[step], abs=5e-3), step  # float16 weights: within a few thousandths
