"""Every URL parameter llmviz reads (:data:`PARAMS`: its kind and what it sets), the names published before
(:data:`RENAMED`), the bounds of a text a link carries, and what is checked and said of a link's values before any
widget sees them: plain functions of strings, with no Streamlit (:mod:`ui.share` applies them to a page's run).

>>> clean("temperature", ["1e999"])
(None, 'temperature = “1e999” is not a usable number: showing the default.')
"""

from __future__ import annotations

import math
import unicodedata
import urllib.parse

from llmviz.lessons.embeddings import pair_from_link
from llmviz.lessons.model import PRESET_NAMES
from ui.corpora import corpus_labels

#: Every URL parameter llmviz reads: its kind (number, text, option, options, flag) and what it sets. Names are
# unique across pages, because the
#: widget key is the parameter name and Streamlit's session state is shared by all pages.
PARAMS: dict[str, tuple[str, str]] = {
    # sidebar
    "corpus": ("option", "the corpus in the sidebar"),
    "seed": ("number", "the random seed in the sidebar"),
    "model": ("option", "the model picked in the sidebar (a key such as shipped:gpt-python-docs)"),
    "present": ("flag", "presenter mode (1 = on)"),
    # Tokens
    "example": ("option", "Tokens: the example text"),
    "text": ("text", "Tokens: your text"),
    "tokenizers": ("options", "Tokens: the tokenizers side by side (repeat the parameter for several)"),
    "vocab": ("number", "Tokens: the BPE vocabulary size to train"),
    "split": ("option", "Tokens: the pre-split pattern"),
    "context": ("number", "Tokens: the context size of the input–target pairs"),
    "stride": ("number", "Tokens: the stride of the input–target pairs"),
    "tokens_tab": ("option", "Tokens: the lesson open under the token chips (a tab's label)"),
    "show_ids": ("flag", "Tokens: show the ids under the tokens"),
    "allow_special": ("flag", "Tokens: read special-token text as the special token"),
    "bpe_chars": ("option", "Tokens: the characters of the corpus BPE trains on"),
    # Embeddings
    "words": ("text", "Embeddings: the words compared"),
    "head_dim": ("option", "Embeddings: RoPE's head_dim"),
    "rope_theta": ("option", "Embeddings: RoPE's base θ"),
    "embeddings_tab": ("option", "Embeddings: the lesson open under the map of the tokens (a tab's label)"),
    "gpt_nn": ("text", "Embeddings: the word whose neighbours the picked model's embeddings show"),
    "cos_a": ("option", "Embeddings: the first of two of your tokens whose cosine is worked out"),
    "cos_b": ("option", "Embeddings: the second of two of your tokens whose cosine is worked out"),
    "w2v_nn": ("text", "Embeddings: the word whose neighbours word2vec shows"),
    "positions_text": ("text", "Embeddings: the sentence whose token and position vectors are added"),
    "w2v_dim": ("number", "Embeddings: word2vec's vector size"),
    "w2v_window": ("number", "Embeddings: word2vec's window"),
    "w2v_train_steps": ("number", "Embeddings: word2vec's steps"),
    "w2v_vocab": ("number", "Embeddings: word2vec's vocabulary (most common words)"),
    "pca_dims": ("option", "Embeddings: the map of the tokens in 2D or 3D"),
    "sin_positions": ("number", "Embeddings: the positions of the sinusoidal encoding"),
    "sin_d_model": ("number", "Embeddings: d_model of the sinusoidal encoding"),
    "rope_positions": ("number", "Embeddings: the positions of RoPE's scores"),
    "vec_1": ("text", "Embeddings: the vector v₁ of the cosine example (numbers separated by commas)"),
    "vec_2": ("text", "Embeddings: the vector v₂ of the cosine example"),
    "vec_3": ("text", "Embeddings: the vector v₃ of the cosine example"),
    "cos_pair": ("option", "Embeddings: the two vectors compared (v₁ and v₃; a link may write v1-v3)"),
    "sin_dims": ("options", "Embeddings: the sinusoidal encoding's dimensions drawn as lines (repeat the parameter)"),
    "sentences": ("text", "Embeddings: MiniLM's sentences, one a line"),
    # Model
    "preset": ("option", "Model: the GPT preset sized (or custom)"),
    "model_sentence": ("text", "Model: the sentence sent through the model"),
    "flow_sentence": ("text", "Model: the sentence the flow (one forward pass) draws"),
    "vocab_size": ("number", "Model: a custom model's vocabulary size"),
    "context_length": ("number", "Model: a custom model's context length"),
    "d_model": ("number", "Model: a custom model's width d_model"),
    "n_heads": ("number", "Model: a custom model's heads"),
    "n_layers": ("number", "Model: a custom model's layers"),
    "qkv_bias": ("flag", "Model: a custom model's bias in W_Q, W_K, W_V"),
    "bias": ("flag", "Model: a custom model's biases in W_O, the MLP and LayerNorm"),
    "positions_kind": ("option", "Model: a custom model's positions (learned, RoPE, …)"),
    "norm": ("option", "Model: a custom model's norm"),
    "mlp": ("option", "Model: a custom model's MLP"),
    "kv_heads": ("number", "Model: a custom model's key/value heads"),
    "experts": ("number", "Model: a custom model's experts (0 = one dense MLP)"),
    "model_tab": ("option", "Model: the lesson open under the architecture (a tab's label)"),
    "ln_layer": ("number", "Model: the block of the LayerNorm view"),
    "norms_layer": ("number", "Model: the block of the RMSNorm vs LayerNorm view"),
    "swiglu_layer": ("number", "Model: the block of the SwiGLU view"),
    "swiglu_token": ("number", "Model: the token of the SwiGLU view"),
    "router_layer": ("number", "Model: the block of the mixture-of-experts router"),
    "mlp_layer": ("number", "Model: the block of the MLP view"),
    "mlp_neurons": ("number", "Model: the neurons shown in the MLP view"),
    "llama_kv_heads": ("option", "Model: key/value heads in the last steps of GPT-2 → Llama"),
    "llama_lab_steps": ("option", "Model: steps of each GPT-2 → Llama lab run"),
    # Model: the tying toggle, one per Preset choice (each preset opens with its own tying): tie_gpt2-124m=false
    **{
        f"tie_{preset}": ("flag", f"Model: tie the output head to the token embedding (preset {preset})")
        for preset in ("picked", *PRESET_NAMES, "custom")
    },
    # Attention
    "query_word": ("option", "Attention: the query word of the first example"),
    "scale": ("flag", "Attention: scale the scores by √d_k"),
    "mask": ("flag", "Attention: causal mask on or off"),
    "heads": ("option", "Attention: number of heads of the step-by-step example"),
    "sentence": ("text", "Attention: the sentence sent through the models"),
    "layer": ("number", "Attention: the GPT layer shown"),
    "head": ("number", "Attention: the GPT head shown"),
    "enc_layer": ("number", "Attention: the encoder (MiniLM) layer shown"),
    "enc_head": ("number", "Attention: the encoder (MiniLM) head shown"),
    "query_heads": ("option", "Attention: query heads of the grouped-query calculator"),
    "gqa_kv_heads": ("option", "Attention: key/value heads of the grouped-query calculator"),
    "gqa_tokens": ("option", "Attention: tokens in the cache of the grouped-query calculator"),
    "attention_tab": ("option", "Attention: the lesson open under the pattern of your sentence (a tab's label)"),
    # Inside the model
    "lens_text": ("text", "Inside the model: the sentence of the logit lens"),
    "lens_from": ("number", "Inside the model: the first position the logit lens's grid shows (a long sentence)"),
    "lens_follow": (
        "option",
        "Inside the model: the position followed through the layers (its label: 'for → statement')",
    ),
    "detector": ("option", "Inside the model: the head detector shown"),
    "loss_text": ("text", "Inside the model: the text scored token by token"),
    "look": ("option", "Inside the model: the tab shown (Logit lens, Head detectors, Knock out heads, …)"),
    "ablate_text": ("text", "Inside the model: the text whose loss the heads are knocked out on"),
    "ablate_mode": ("option", "Inside the model: zero or mean ablation"),
    "knocked": ("options", "Inside the model: the heads knocked out together (repeat the parameter for several)"),
    "patch_clean": ("text", "Inside the model: the clean prompt of activation patching"),
    "patch_corrupted": ("text", "Inside the model: the corrupted prompt of activation patching"),
    "patch_component": ("option", "Inside the model: what is patched (residual stream, attention, MLP, each head)"),
    "patch_answer": ("text", "Inside the model: the answer token of the logit difference (empty: the clean top)"),
    "patch_wrong": ("text", "Inside the model: the wrong token of the logit difference (empty: the corrupted top)"),
    "steer_prompt": ("text", "Inside the model: the prompt continued with and without steering"),
    "steer_layer": ("number", "Inside the model: the layer steered"),
    "steer_alpha": ("number", "Inside the model: α, how much of the direction is added"),
    "steer_kind": ("option", "Inside the model: steer along a mean difference or a token's direction"),
    "steer_token": ("text", "Inside the model: the token whose direction is added"),
    "steer_positive": ("text", "Inside the model: the prompts steered towards, one a line"),
    "steer_negative": ("text", "Inside the model: the prompts steered away from, one a line"),
    "feature": ("number", "Inside the model: the autoencoder feature shown in the Features tab"),
    "feature_search": ("text", "Inside the model: the text searched for the features that fire on it"),
    "feature_prompt": ("text", "Inside the model: the prompt continued with and without a feature's direction"),
    "feature_alpha": ("number", "Inside the model: α, how much of the feature's direction is added"),
    "feature_text": ("text", "Inside the model: the text whose loss the features are knocked out on"),
    # Training
    "train_model": ("option", "Training: the model to train"),
    "train_tokenizer": ("option", "Training: char or BPE"),
    "train_vocab": ("number", "Training: the BPE vocabulary"),
    "clip": ("flag", "Training: clip gradients at norm 1"),
    "train_context": ("number", "Training: the context"),
    "sample_every": ("number", "Training: sample every N steps (0 = never)"),
    "precision": ("option", "Training: float32, bf16 or fp16 (the options the machine has)"),
    "race_steps": ("number", "Training: steps per runner of a race"),
    "race_net": ("option", "Training: the model of the optimizer race"),
    "race_switch": ("option", "Training: the architecture switch raced"),
    "by_hand": ("text", "Training: the two lines of the loss, step by step"),
    "loss_position": ("number", "Training: the position of the loss, step by step"),
    "before_prompt": ("text", "Training: the prompt of the before/after samples"),
    "optimizer": ("option", "Training: the optimizer"),
    "lr": ("option", "Training: the learning rate"),
    "batch": ("number", "Training: the batch size"),
    "steps": ("number", "Training: the number of steps"),
    "positions": ("number", "Training: positions per sequence in the loss example"),
    "training_part": ("option", "Training: the open tab (your runs, races, step 0 vs step N, the loss by hand, …)"),
    # Sampling
    "prompt": ("text", "Sampling: the prompt"),
    "temperature": ("number", "Sampling: the temperature"),
    "top_k": ("number", "Sampling: top-k (0 = off)"),
    "top_p": ("number", "Sampling: top-p (1 = off)"),
    "method": ("option", "Sampling: sampling, greedy or beam search"),
    "beam_width": ("number", "Sampling: the beam width"),
    "new_tokens": ("number", "Sampling: how many tokens to generate"),
    "sampling_part": ("option", "Sampling: the open tab (step mode, generate, three temperatures, the KV cache)"),
    "temperatures": ("options", "Sampling: the three temperatures compared (repeat the parameter)"),
    "kv_tokens": ("number", "Sampling: tokens to generate with and without the KV cache"),
    # Adapting (old /adapt links open it, with these)
    "lora_rank": ("number", "Adapting: the LoRA rank"),
    "quant_bits": ("number", "Adapting: bits per quantized weight"),
    "lora_alpha": ("option", "Adapting: LoRA's α"),
    "lora_targets": ("options", "Adapting: the matrices LoRA adapts (repeat the parameter for several)"),
    "lora_steps": ("number", "Adapting: steps of the LoRA vs full fine-tuning runs"),
    "quant_scale": ("option", "Adapting: per channel or per tensor"),
    "quant_zero": ("option", "Adapting: symmetric or with a zero point"),
    "quant_prompt": ("text", "Adapting: the prompt of the side-by-side text"),
    "qat_bits": ("option", "Adapting: bits while training (QAT)"),
    "qat_steps": ("number", "Adapting: steps of the QAT runs"),
    "task_steps": ("number", "Adapting: steps of the classifier runs"),
    "memory_steps": ("number", "Adapting: steps of the memory-switch runs"),
    "zero_processes": ("number", "Adapting: processes for the ZeRO/FSDP picture"),
    "lora_matrix": ("option", "Adapting: the matrix whose ΔW is drawn"),
    "quant_layer": ("option", "Adapting: the matrix of the quantization histogram"),
    "adapting_part": ("option", "Adapting: the open tab (LoRA, quantization, fine-tuning for a task, memory, …)"),
    # Tuning
    "tuning_tab": ("option", "Tuning: the open tab (side by side, the response mask, DPO, tune your own)"),
    "tuning_question": ("option", "Tuning: the held-out question the three models answer"),
    "tuning_own": ("text", "Tuning: a question of your own for the three models"),
    "tuning_decoding": ("option", "Tuning: greedy or sampled answers"),
    "tuning_scored": ("option", "Tuning: whose answer's tokens are scored under every model"),
    "tuning_example": ("number", "Tuning: the training example whose response mask is drawn"),
    "tuning_sft_steps": ("number", "Tuning: steps of an SFT run"),
    "tuning_beta": ("number", "Tuning: DPO's β"),
    "tuning_dpo_steps": ("number", "Tuning: steps of a DPO run"),
    # Serving
    "serving_part": ("option", "Serving: the open tab (the KV cache, paged attention, batching)"),
    "kv_growth_tokens": ("number", "Serving: how many tokens the model writes while its KV cache is measured"),
    "kv_variants": ("options", "Serving: the other ways to store the cache drawn beside it"),
    "page_block": ("option", "Serving: paged attention's block size"),
    "page_lengths": ("text", "Serving: the requests' lengths (comma-separated)"),
    "batch_slots": ("number", "Serving: requests served at once"),
}

#: Link parameters published under another name before: a link copied then still opens the same view. A name in
#: :data:`PARAMS` is a promise; renaming one adds its old name here (``tests/project/test_link_names.py`` keeps every
#: name ever published answered).
RENAMED: dict[str, str] = {
    "race_model": "race_net",  # Training: the race's model (renamed in 36b69b5)
    "batch_text": "by_hand",  # Training: the loss-by-hand text (renamed in 36b69b5)
}

#: Parameters that are not widget bindings (read by llmviz itself).
SPECIAL = {"model", "present", "teacher"}  # ui.picker, ui.present, ui.identity (the teacher key)
#: Query parameters Streamlit reserves for itself.
STREAMLIT_OWN = {"embed", "embed_options"}

MAX_TEXT = 2_000  #: characters a text parameter may carry (longer text is shortened, with a notice)
#: bytes a text parameter may take in the address once percent-encoded (an emoji is 12): with the other settings,
#: an address stays far below the 64 KB a server (Tornado) or the 8 KB a proxy accepts, so every link opens
MAX_TEXT_BYTES = 6_000
#: text parameters whose box takes at most this many characters (:func:`bind` gives the box this ``max_chars``): a
#: longer text in a link is no text the box could hold, so it falls back to the box's default, with a notice
MAX_CHARS = {"vec_1": 500, "vec_2": 500, "vec_3": 500, "sentences": 5_000, "flow_sentence": 2_000, "tuning_own": 300}


def link_text(text: str) -> str:
    """The start of ``text`` that a link carries: at most :data:`MAX_TEXT` characters and
    :data:`MAX_TEXT_BYTES` bytes percent-encoded (never a character cut in half).

    >>> len(link_text("a" * 5000)), len(link_text("🦙" * 1000))
    (2000, 500)
    >>> link_text("short")
    'short'
    """
    carried = text[:MAX_TEXT]
    if len(urllib.parse.quote_plus(carried)) <= MAX_TEXT_BYTES:
        return carried
    low, high = 0, len(carried)  # the longest prefix that fits: encoded length grows with the prefix
    while low < high:
        middle = (low + high + 1) // 2
        if len(urllib.parse.quote_plus(carried[:middle])) <= MAX_TEXT_BYTES:
            low = middle
        else:
            high = middle - 1
    return carried[:low]


def short(value: str, limit: int = 40) -> str:
    """``value`` cut to ``limit`` characters for a notice, an ellipsis marking the cut.

    >>> short("abcdef", 3), short("abc", 3)
    ('abc…', 'abc')
    """
    return value if len(value) <= limit else value[:limit] + "…"


def _same(raw: str, value) -> bool:
    """Does the URL text ``raw`` name the widget value ``value`` (so removing it only meant "default")?"""
    if isinstance(value, bool):
        return raw.lower() == str(value).lower()
    if isinstance(value, (int, float)):
        try:
            number = float(raw)
        except ValueError:
            return False
        return math.isfinite(number) and math.isclose(number, float(value), rel_tol=1e-9, abs_tol=1e-12)
    return raw == str(value)


def link_notices(
    initial: dict[str, list[str]], current: dict[str, list[str]], values: dict, labels: dict | None = None
) -> list[str]:
    """What to tell the student about a link's parameters, after the page used what it could.

    ``initial``: the URL's parameters when the session started; ``current``: after the page ran
    (Streamlit removed or corrected what its widgets could not take); ``values``: the widgets'
    values now (session state); ``labels``: the same values as a link writes them (an option's label, which
    is what the address holds, not the value behind it), where they differ.

    >>> link_notices({"temperature": ["nan"], "top_k": ["5"], "zoom": ["3"]}, {"top_k": ["5"]},
    ...              {"temperature": 0.8, "top_k": 5})
    ['temperature = “nan” could not be used here: showing 0.8.', 'zoom is not a setting llmviz knows: ignored.']
    >>> link_notices({"train_model": ["gpt-huge"]}, {}, {"train_model": "gpt-micro"},
    ...              {"train_model": "GPT micro (2 layers, d 64)"})
    ['train_model = “gpt-huge” could not be used here: showing GPT micro (2 layers, d 64).']
    """
    notices = []
    for name, raw_values in initial.items():
        if name in STREAMLIT_OWN or name in SPECIAL:
            continue
        if name not in PARAMS:
            notices.append(f"{short(name, 30)} is not a setting llmviz knows: ignored.")
        elif raw_values and current.get(name) != raw_values:  # an empty value was reported by the first check
            value = values.get(name)
            label = labels.get(name, value) if labels else value  # what a link writes (an option's label)
            notice = _changed_notice(name, raw_values, current.get(name), value, label)
            notices += [notice] if notice else []
    return notices


def _changed_notice(name: str, raw_values: list[str], now: list[str] | None, value, label) -> str | None:
    """The notice for a parameter the page changed: ``raw_values`` from the link, ``now`` in the address after the
    page ran (None: removed), ``value`` the widget's, ``label`` the same as a link writes it. None when the link
    named the default value (Streamlit only tidied the address).

    >>> _changed_notice("top_k", ["0.5"], ["1"], 1, 1)
    'top_k = “0.5” was adjusted to what this page allows: 1.'
    >>> _changed_notice("top_k", ["10"], None, 10, 10) is None
    True
    """
    raw = raw_values[-1]
    if now is None and len(raw_values) == 1 and (_same(raw, value) or _same(raw, label)):
        return None
    shown = ", ".join(short(str(v), 30) for v in label) if isinstance(label, list) else short(str(label), 40)
    if now is None:
        return f"{name} = “{short(raw)}” could not be used here: showing {shown or 'the default'}."
    return f"{name} = “{short(raw)}” was adjusted to what this page allows: {shown}."


def clean(name: str, values: list[str]) -> tuple[list[str] | None, str | None]:
    r"""A first check of one URL parameter, by its declared kind, before any widget sees it.

    Returns the values to keep (``None``: drop the parameter) and a notice (or ``None``).
    Widgets then check the rest (ranges, options) themselves.

    >>> clean("temperature", ["1e999"])
    (None, 'temperature = “1e999” is not a usable number: showing the default.')
    >>> clean("prompt", ["ab\x00c"])
    (['abc'], None)
    >>> clean("prompt", ["👩\u200d💻 \u200fسلام\u200c"])  # joiners and direction marks are text
    (['👩\u200d💻 \u200fسلام\u200c'], None)
    >>> clean("text", ["x" * 3000])[1]
    'text was 3,000 characters long: shortened to 2,000.'
    >>> clean("vec_1", ["1, " * 200])  # v₁'s box takes 500 characters
    (None, 'vec_1 is 600 characters long, more than its box takes (500): showing the default.')
    """
    kind = PARAMS[name][0]
    raw = values[-1] if values else ""
    if kind == "number":
        return _clean_number(name, raw)
    if kind == "text":
        return _clean_text(name, raw)
    if len(values) > 50 or any(len(value) > 300 for value in values):
        return None, f"{name} = “{short(raw)}” is not one of this page's choices: showing the default."
    return values, None


def _clean_number(name: str, raw: str) -> tuple[list[str] | None, str | None]:
    """A number parameter: kept as it came when it is a finite number within ±10¹², else dropped with a notice."""
    try:
        number = float(raw)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or abs(number) > 1e12:
        return None, f"{name} = “{short(raw)}” is not a usable number: showing the default."
    return [raw], None


def _clean_text(name: str, raw: str) -> tuple[list[str] | None, str | None]:
    """A text parameter: control characters and lone surrogates dropped, format characters kept (a zero-width joiner
    builds an emoji sequence; direction marks and non-joiners are part of Persian or Arabic text); longer than its
    box takes, dropped; longer than a link carries, shortened (each with a notice)."""
    text = "".join(ch for ch in raw if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cs"))
    if len(text) > MAX_CHARS.get(name, len(text)):
        return None, (
            f"{name} is {len(text):,} characters long, more than its box takes ({MAX_CHARS[name]:,}): "
            "showing the default."
        )
    carried = link_text(text)
    if carried != text:
        return [carried], f"{name} was {len(text):,} characters long: shortened to {len(carried):,}."
    return [text], None


def aliased(name: str, values: list[str] | None) -> list[str] | None:
    """A link's value written the short way, as the widget shows it: a Model preset by its id (``preset=gpt2-124m``,
    as the CLI and older links name it) becomes the name the Preset box shows (a bound select box reads its label).

    >>> aliased("preset", ["attn-only-2l"]), aliased("preset", ["custom"])
    (['Attention only (no MLP): 2 layers, d 64'], ['custom'])

    A corpus by its name, as the command line names it (``corpus=names``, ``corpus=upload``), is its title too:

    >>> aliased("corpus", ["names"]), aliased("corpus", ["upload"]), aliased("corpus", ["Tiny Shakespeare"])
    (['US census first names'], ['Your own text (upload)'], ['Tiny Shakespeare'])

    Embeddings' pair of vectors compared, typed without subscripts (``cos_pair=v1-v3``), is its label too:

    >>> aliased("cos_pair", ["v1-v3"]), aliased("cos_pair", ["v3 and v1"])  # not an option: Streamlit drops it
    (['v₁ and v₃'], ['v3 and v1'])
    """
    from llmviz.lessons.model import preset_title

    if name == "preset" and values and values[-1] in PRESET_NAMES:
        return [preset_title(values[-1])]
    if name == "cos_pair" and values and pair_from_link(values[-1]):
        return [pair_from_link(values[-1])]
    if name == "corpus" and values:
        return [corpus_labels().get(values[-1], values[-1])]
    return values


def renamed(params: dict[str, list[str]]) -> dict[str, list[str]]:
    """A link's parameters under today's names (:data:`RENAMED`); a value given under both names is the new one's.

    >>> renamed({"race_model": ["gpt-micro"], "seed": ["3"]})
    {'seed': ['3'], 'race_net': ['gpt-micro']}
    >>> renamed({"race_model": ["gru"], "race_net": ["gpt-micro"]})
    {'race_net': ['gpt-micro']}
    """
    now = {name: values for name, values in params.items() if name not in RENAMED}
    for old, new in RENAMED.items():
        if old in params:
            now.setdefault(new, params[old])
    return now


def widget_name(widget_id: str) -> str:
    """The setting a widget id names, for a notice: its link parameter's description, else its key.

    >>> widget_name("$$ID-0f3a9c-seed")
    'the random seed in the sidebar'
    >>> widget_name("$$ID-0f3a9c-picker_model_0")
    'picker_model_0'
    >>> widget_name("$$ID-0f3a9c-tie_gpt2-124m")  # a key may hold a hyphen (a preset's id)
    'Model: tie the output head to the token embedding (preset gpt2-124m)'
    """
    key = widget_id.split("-", 2)[-1] if widget_id.startswith("$$ID-") else widget_id
    return PARAMS[key][1] if key in PARAMS else short(key, 40)
