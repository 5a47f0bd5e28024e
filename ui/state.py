"""Every name the app keeps in a browser session's ``st.session_state``, declared once.

Streamlit keeps one dictionary per browser session, shared by all pages. The app puts two kinds of names in it,
and this module declares both, the way :data:`ui.link_params.PARAMS` declares the link's parameters:

- **slots** — values the app writes itself (the picked model, a trained BPE tokenizer, quiz answers …): each a
  :class:`Slot` with its type, its default and what it is for, read and written only through it::

      state.TRAINING_FOCUS.set(job.id)
      focus = state.TRAINING_FOCUS.get()          # None until set (or the slot's default)
      state.QUIZ_OPEN.set(True, "attention")      # a family: one entry per page, "quiz_open_attention"

- **widget keys** — the ``key=`` of every widget and chart, in :data:`WIDGETS` (name → what it is), used as
  ``key=state.widget("lora_heatmap")``; a family (a name ending in ``_``) takes the parts that make it unique:
  ``state.widget("edit_", name)`` → ``"edit_<name>"``. A widget's value is read with :func:`value`. Widgets
  bound to the link (``**share.bind("layer")``: the key is the parameter's name) are declared in
  :data:`ui.link_params.PARAMS`, and the values that survive navigation
  (``**ui.widgets.keep("runs_on_chart")``: key ``keep_runs_on_chart``) in :data:`KEPT`.

``tests/project/test_code_health.py`` reads every file of the app: a ``st.session_state`` access outside this module, a
literal ``key=``, an undeclared name, a declaration nobody uses, or a name that falls inside another's family
fails it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import streamlit as st

from llmviz.lessons.defaults import first_read

_MISSING = object()


@dataclass(frozen=True)
class Slot:
    """One value the app keeps in a browser session: its name, what it holds, its default, what it is for.

    ``family``: the name is a prefix, and each entry adds a suffix (one per page, model or job)."""

    name: str
    holds: type | tuple[type, ...]
    doc: str
    default: Callable[[], Any] | None = None  # a factory (dict, list, …): a fresh value for every session
    family: bool = False

    def key(self, suffix: object = "") -> str:
        """The entry's name in ``st.session_state`` (a family's name plus ``suffix``)."""
        if self.family == (suffix == ""):
            raise KeyError(f"{self.name!r} {'needs' if self.family else 'takes no'} suffix")
        return f"{self.name}{suffix}"

    def get(self, suffix: object = "", default: Any = _MISSING) -> Any:
        """The value, else ``default``, else the slot's default (None when it has none)."""
        found = st.session_state.get(self.key(suffix), _MISSING)
        if found is not _MISSING:
            return found
        if default is not _MISSING:
            return default
        return self.default() if self.default is not None else None

    def set(self, value: Any, suffix: object = "") -> None:
        """Store ``value`` (of the declared type: anything else is a bug, raised as TypeError)."""
        if not isinstance(value, self.holds):
            raise TypeError(f"session state {self.key(suffix)!r} holds {self.holds}, not {type(value).__name__}")
        st.session_state[self.key(suffix)] = value

    def setdefault(self, suffix: object = "") -> Any:
        """The value, first set to the slot's default when absent (so that changing it in place is kept)."""
        key = self.key(suffix)
        if key not in st.session_state:
            if self.default is None:
                raise KeyError(f"{self.name!r} has no default to set")
            st.session_state[key] = self.default()
        return st.session_state[key]

    def pop(self, suffix: object = "", default: Any = None) -> Any:
        """Remove the entry and return its value (``default`` when absent)."""
        return st.session_state.pop(self.key(suffix), default)

    def present(self, suffix: object = "") -> bool:
        """Has the entry been set in this browser session?"""
        return self.key(suffix) in st.session_state


# ---------------------------------------------------------------------------- slots
# who the student is (ui.identity)
STUDENT_SECRET = Slot("_llmviz_student_secret", str, "this browser's identity secret (its cookie's value)")
STUDENT_ID = Slot("_llmviz_student_id", str, "the student this session is (a hash of the secret, or of the login)")
COOKIE_TO_SET = Slot("_llmviz_cookie_to_set", bool, "the browser has no identity cookie yet: set it once", default=bool)
TEACHER = Slot("_llmviz_teacher", bool, "this session is the teacher's (the teacher key, or the registry says so)")
TEACHER_KEY_SEEN = Slot("_llmviz_teacher_key_seen", str, "the teacher key this session judged (and took out)")
PROJECTED = Slot("_llmviz_projected_run", str, "the run the teacher put on the projector (the class view)")
# the picked model (ui.picker)
PICKED = Slot("_picker_selected", str, "the picked model's base key (no @step); tests set it to pick a model")
PICKED_STEPS = Slot(
    "_picker_steps", dict, "run key → the step picked on its slider, or None: follow the newest snapshot", default=dict
)
PICKER_VERSION = Slot(
    "_picker_version", int, "bumped when the app changes the pick: the picker is drawn anew", default=int
)
PICKER_NOTICE = Slot("_picker_notice", str, "why a pick was refused, shown once by the sidebar's next run")
NOT_READY_SAID = Slot(
    "_picker_not_ready_said", str, "the picked model's 'not ready yet' note this page run has shown (said once a run)"
)
STEP_WIDGET = Slot("_picker_step_widget", str, "the key of the step slider drawn last (older ones are stale)")
SHOWN_NEWEST = Slot("_picker_shown_newest", dict, "run key → the newest step the sidebar's slider showed", default=dict)
STEP_MOVED = Slot("_picker_step_moved", bool, "the step slider was moved: its fragment reruns the page")
MODEL_USED = Slot("_picker_used", bool, "did this page's last run draw the picked model (current() was asked)?")
FOLLOWING = Slot(
    "_picker_follow_rerun", bool, "this run redraws the page at a run's newer snapshot (app.py times it apart)"
)
ACTIVE_JOBS = Slot(
    "_picker_active_jobs",
    set,
    "ids of this session's jobs that were running at the sidebar's last look (the page is redrawn when one ends)",
    default=set,
)
SESSION_ID = Slot("_llmviz_session_id", str, "this browser session's id, written for tests to find its jobs")
# lab runs and computations in workers (ui.panels.runs)
RUNS_ON_PAGE = Slot(
    "_runs_on_page", dict, "the page (script hash) and the ids of the runs it draws live: the sidebar leaves them to it"
)
TASK_JOBS = Slot(
    "_task_jobs",
    dict,
    "part of a page → the task job computing its result: {id, key of what it computes}",
    default=dict,
)
# the link (ui.share)
LINK_CUT = Slot(
    "_share_cut", dict, "link parameter → (characters the link carries, characters of the text)", default=dict
)
LINK_INITIAL = Slot("_share_initial", dict, "the link's parameters as the session first opened it")
LINK_CHECKED = Slot("_share_checked", bool, "the link's parameters were checked against what the page shows")
LINK_NOTICES = Slot("_share_notices", list, "notices about the link, shown by the page", default=list)
LINK_MODEL_APPLIED = Slot("_share_model_restored", bool, "the link's model= was given to the picker")
LINK_TABS = Slot(
    "_share_tabs", set, "the keys of the lesson tabs drawn once: a link's settings chose their tab then", default=set
)
# the class answering together (ui.class_live)
PAGE_PATH = Slot("_llmviz_page_path", str, "the address of the page this run draws (app.py): a view's link")
LEAD_GO = Slot("_llmviz_lead_go", str, "the lesson step's view the teacher's own page goes to next")
LEAD_GO_TRIES = Slot(
    "_llmviz_lead_go_tries", tuple, "how often the teacher's page was sent to LEAD_GO, and the move's name"
)
LEAD_SEEN = Slot("_llmviz_lead_seen", int, "the version of the teacher's lead this page last moved to (-1: none)")
LEAD_ASKED = Slot("_llmviz_lead_asked", int, "how often this page drew the script of the lead's last move again")
# navigation (ui.routing)
ROUTER_RUNNING = Slot("_llmviz_router_running", bool, "app.py's router is drawing this run")
# questions (ui.panels.quiz)
QUIZ_ANSWERS = Slot("quiz_answers", dict, "question key → (page, chosen option index, correct?)", default=dict)
QUIZ_OPEN = Slot("quiz_open_", bool, "page → its questions were opened", family=True)
QUIZ_JOBS = Slot("_quiz_jobs", dict, "setting → the id of the job computing that question's answer", default=dict)
# the sidebar
UPLOADED_CORPUS = Slot("uploaded_corpus", tuple, "(file name, text) of the corpus this session uploaded")
# Tokens
BPE_JOB = Slot(
    "bpe_job", dict, "the BPE training job of the Tokens page: id, pattern, vocabulary size, corpus and its content key"
)
BPE_TOKENIZER = Slot("bpe_tokenizer", object, "the BPE tokenizer trained on the Tokens page")
BPE_LISTED = Slot("bpe_listed", bool, "the trained BPE was added to the Tokens page's tokenizers side by side (once)")
BPE_ORIGIN = Slot(
    "bpe_origin",
    dict,
    "what that tokenizer was trained with (pattern, vocabulary size, corpus and its content key)",
    default=dict,
)
# Embeddings
RESULT_ASKED = Slot(
    "result_asked_", bool, "the lab was asked for the student's kept result of this task (once a session)", family=True
)
W2V_JOB = Slot("w2v_job", dict, "the word2vec training job of the Embeddings page: id, corpus, steps")
W2V = Slot("w2v", tuple, "(corpus, the trained word2vec state, the steps its run was asked for)")
# Inside the model
LENS_SENTENCE = Slot(
    "_lens_sentence",
    dict,
    "logit-lens link parameter → the sentence (hash of its ids) its value was chosen on",
    default=dict,
)
INDUCTION_JOB = Slot("inside_induction_job", str, "the id of the induction-head run")
INDUCTION_PREVIOUS = Slot(
    "inside_induction_previous",
    str,
    "the model key picked before the induction run took its place (section 4 offers it back)",
)
SWEEP_ASKED = Slot(
    "inside_sweep_asked",
    dict,
    "kind (ablation, patching, steering) → the sweep asked for with its button (a content key)",
    default=dict,
)
SWEEP_RESULTS = Slot(
    "inside_sweep_results", dict, "kind → (content key, result) of the last sweep a lab job ran", default=dict
)
ABLATION_JOB = Slot("inside_ablation_job", dict, "the lab job knocking out every head: id and content key")
PATCHING_JOB = Slot("inside_patching_job", dict, "the lab job patching every cell: id and content key")
STEERING_JOB = Slot("inside_steering_job", dict, "the lab job writing the plain and steered texts: id and content key")
SAE_RUNS = Slot(
    "inside_sae_runs",
    dict,
    "this session's autoencoder runs: job id → the model it reads (name, weights fingerprint) and whether shown",
    default=dict,
)
SAE_LABELS = Slot(
    "inside_sae_labels",
    dict,
    "autoencoder content id → {feature: the student's label} (kept in the session)",
    default=dict,
)
# Loss & training
LLAMA_LAB = Slot("llama_lab", dict, "the Model page's GPT-2 → Llama lab runs: job ids, corpus and steps")
RUN_REFUSED = Slot(
    "run_refused_",
    str,
    "where runs are started (a button) → why the server refused the last ones, shown there until it is pressed again",
    family=True,
)
CONTROL_SAID = Slot(
    "_control_said_",
    str,
    "run id → what its last control (Pause, Resume, Stop, Park, Delete) said, shown once where the run is drawn",
    family=True,
)
LAB_FAULT_SAID = Slot("_lab_fault_said", bool, "this page run said already that the lab cannot be read (ui.lab)")
DELETE_ASKED = Slot("_lab_delete_asked", str, "the kept run whose Delete was pressed once: the next press deletes it")
CLEAR_ASKED = Slot(
    "_lab_clear_asked", tuple, "the ids of the runs Clear all runs asked about: Yes deletes them, Cancel keeps them"
)
TRAINING_FOCUS = Slot("training_focus", (str, type(None)), "the id of the run the Training page shows first")
DECODER_JOB = Slot("decoder_job", str, "the id of the encoder–decoder run")
CHART_OFFERED = Slot(
    "runs_offered", set, "ids of the runs the comparison chart has offered (a new run joins it once)", default=set
)
# Sampling
GENERATED = Slot("generated", tuple, "(model key, the generated tokens' records, the prompt as kept)")
BEAM = Slot("beam", tuple, "(model key, the beam search's result, the prompt's ids)")
THREE = Slot("three", tuple, "(model key, the texts at three temperatures)")
KV_COMPARISON = Slot("kv", tuple, "(model key, generation timed with and without the KV cache)")
STEP_MODE = Slot("step_mode_", dict, "model key → step mode's {sequence, prompt, seed}", family=True)


def slots() -> Iterator[Slot]:
    """Every declared slot."""
    return (value for value in globals().values() if isinstance(value, Slot))


# ---------------------------------------------------------------------------- widget keys
#: Every widget's and chart's key (link-bound ones excepted: ui.link_params.PARAMS). A name ending in "_" is a family.
WIDGETS: dict[str, str] = {
    # the sidebar
    "deterministic": "Sidebar: deterministic pages",
    "device": "Sidebar: the device models run on",
    "corpus_upload": "Sidebar: the uploaded corpus file",
    "kept_text": "Sidebar: a text the student uploaded before, offered back from the lab",
    "download_corpus": "Sidebar: download the chosen corpus now",
    "cancel_download": "Sidebar: cancel the download",
    "present_mode": "Sidebar: presenter mode",
    "picker_model_": "Sidebar: the model picker (its version: drawn anew when the app changes the pick)",
    "picker_step_": "Sidebar: the picked run's step slider (run, version, snapshots)",
    "hub_cancel_": "Sidebar: cancel the download of the picked pretrained model (its name)",
    "hub_offer_": "A page's offer of a bigger pretrained model: show or download it (page, model)",
    "lazy_": "Any page: an expander whose content runs only while it is open (ui.sections.lazy)",
    "forward_pass_": "Model and Home: the flow, one forward pass animated (its state: the block opened), by page",
    "picture_": "Any page: the container of its key picture, the first thing it shows (ui.sections.key_picture)",
    "questions_": "Any page: the container of its questions, which presenter mode shows last (ui/static/presenter.js)",
    "quiz_choice_": "Any page: a question's options (page, question)",
    "quiz_reveal_": "Any page: a question's Reveal button (page, question)",
    "quiz_ask_": "Any page: Ask me, which opens the questions (page)",
    "quiz_pending_": "Any page: Show the questions, once their answers are computed (page)",
    "run_pause_": "A run's Pause button (where, run)",
    "run_resume_": "A run's Resume button (where, run)",
    "run_stop_": "A run's or a task's Stop button (where, run)",
    "run_chart_": "A run's loss chart (where, run)",
    "task_start_": "Any page: start a computation in a worker (the part of the page)",
    # Tokens
    "train_bpe": "Tokens: Train BPE",
    # Embeddings
    "nn_": "Embeddings: the nearest-neighbour table (column)",
    "embedding_map": "Embeddings: the map of the picked model's tokens (a click on a token looks it up)",
    "train_w2v": "Embeddings: Train word2vec",
    # Model
    "llama_lab_start": "Model: train the GPT-2 → Llama steps on the corpus",
    "llama_lab_chart": "Model: the GPT-2 → Llama lab runs' validation losses",
    # Attention
    "edit_": "Attention: an editable matrix of the worked example (name)",
    "attention_steps_": "Attention: the step-by-step tables (heads)",
    "masks": "Attention: the four masks",
    "attention_heat_": "Attention: one head's pattern as a heatmap (gpt or encoder)",
    "attention_query_": "Attention: the query whose lines are drawn (gpt or encoder)",
    "attention_lines_": "Attention: one head's pattern as lines (gpt or encoder)",
    "attention_grid_": "Attention: every layer and head (gpt or encoder)",
    "attention_before_after_": "Attention: step 0 vs the picked step (column)",
    # Inside the model
    "compare_": "Inside the model: step 0 vs this step, side by side (section)",
    "lens_from_": "Inside the model: the first position of the logit lens in step 0's column (column, length)",
    "lens_grid_": "Inside the model: the logit lens grid (column)",
    "lens_follow_": "Inside the model: the position followed in step 0's column (column, text)",
    "lens_true_": "Inside the model: the true next token's probability per layer (column)",
    "heads_": "Inside the model: every head's score (column)",
    "loss_table_": "Inside the model: the loss on each token (column)",
    "induction_start": "Inside the model: train the induction run",
    "induction_stop": "Inside the model: stop the induction run",
    "induction_chart": "Inside the model: the induction score and loss by step",
    "induction_pick": "Inside the model: show the induction run on every page",
    "induction_again": "Inside the model: train the induction run again",
    "induction_back": "Inside the model: pick again the model picked before the induction run",
    "ablation_guess": "Inside the model: the student's guess of the head that matters most",
    "ablation_run": "Inside the model: knock out each head, one at a time",
    "ablation_grid": "Inside the model: every head's effect on the loss (layer × head)",
    "ablation_download": "Inside the model: download the head-ablation grid",
    "ablation_tokens": "Inside the model: the loss change on every token with the chosen heads knocked out",
    "patching_run": "Inside the model: patch every cell",
    "patching_grid": "Inside the model: the share of the logit difference each patch restores",
    "patching_download": "Inside the model: download the patching grid",
    "steer_download": "Inside the model: download the plain and steered texts",
    "steer_run": "Inside the model: write the plain and steered texts (a lab job, for a large model)",
    "sae_pick": "Inside the model: the autoencoder browsed (the shipped one or a run of yours)",
    "feature_table": "Inside the model: the features, most frequent first",
    "feature_histogram": "Inside the model: the picked feature's activation histogram",
    "feature_label_": "Inside the model: the student's label of a feature (per autoencoder and feature)",
    "feature_labels_download": "Inside the model: download the student's feature labels",
    "feature_knock_tokens": "Inside the model: the loss change on every token with features knocked out",
    "feature_knocked": "Inside the model: the features knocked out",
    "feature_knock_mode": "Inside the model: knock a feature out by subtracting it or from the reconstruction",
    "sae_hook": "Inside the model: the hook point an autoencoder is trained at",
    "sae_size": "Inside the model: the autoencoder's dictionary size",
    "sae_sparsity": "Inside the model: TopK or L1",
    "sae_k": "Inside the model: TopK's k",
    "sae_l1": "Inside the model: the L1 coefficient",
    "sae_steps": "Inside the model: the autoencoder's training steps",
    "sae_train": "Inside the model: train the autoencoder (a lab run)",
    "sae_curves_": "Inside the model: an autoencoder run's curves (per run)",
    # Loss & training
    "train": "Training: Train",
    "run_device": "Training: the device of the Ray cluster a run trains on (with LLMVIZ_RAY_ADDRESS)",
    "recorded_curve": "Training: how the shipped GPT learned (the page's picture before a run)",
    "switch_race": "Training: race two runs that differ in one switch",
    "race_chart": "Training: the newest race's curves",
    "longer_context": "Training: the context at which a finished architecture race is measured",
    "longer_chart": "Training: the loss at every position beyond the training context",
    "runs_show_val": "Training: show the validation loss",
    "runs_smoothing": "Training: smoothing of the training curves",
    "runs_chart": "Training: every run's curves",
    "runs_download_": "Training: the run to download (the picked run)",
    "runs_clear": "Training: clear all runs",
    "runs_clear_yes": "Training: yes, delete the runs Clear all runs asked about",
    "runs_clear_cancel": "Training: keep the runs Clear all runs asked about",
    "kept_delete_choice": "Training: which kept run to resume or delete (llmviz.lab)",
    "kept_delete": "Training: delete the chosen kept run",
    "kept_delete_cancel": "Training: keep the chosen kept run whose Delete was pressed once",
    "login": "Sidebar: log in (where a login provider is configured)",
    "student_name": "Training: the student's name for the class view",
    "class_sort": "Class view: sort the runs by",
    "class_log_x": "Class view: log-scale steps",
    "class_validation": "Class view: validation loss on the chart",
    "class_chart": "Class view: every run's curve",
    "class_run": "Class view: the run to act on",
    "class_project": "Class view: show the run on the projector",
    "class_csv": "Class view: download the class table as CSV",
    "class_stop": "Class view: stop the run",
    "class_park": "Class view: park the run",
    "live_ask_": "Predict, then reveal: the teacher asks the class this question (its key)",
    "live_answer_": "The class's poll: this student's answer (the poll's id)",
    "live_poll": "The class's poll: its box on every page",
    "live_chart": "The class's poll: the answers on the teacher's projector",
    "live_close": "The class's poll: the teacher closes it",
    "live_reveal": "The class's poll: the teacher reveals the model's answer",
    "live_end": "The class's poll: the teacher takes it off the screens",
    "live_names": "The class's poll: the teacher shows who answered what",
    "live_csv": "The class's poll: download its answers as CSV",
    "live_lead": "The teacher's Lead switch: the students who follow see the teacher's view",
    "live_unfollow": "A student stops following the teacher",
    "live_follow": "A student follows the teacher again",
    "lesson_back_": "The running lesson: back one step (the followers too) (the step it was drawn at)",
    "lesson_next_": "The running lesson: on to the next step (the followers too) (the step it was drawn at)",
    "lesson_end": "The running lesson: end it (the lead stays)",
    "lesson_pick": "Class view: the shipped lesson to start",
    "lesson_file": "Class view: a lesson file of the teacher's own (TOML)",
    "lesson_start": "Class view: start the lesson for the class",
    "polls_pick": "Class view: the kept poll to download",
    "polls_csv": "Class view: download the kept poll's answers",
    "polls_names": "Class view: the download names the students",
    "decoder_train": "Training: train the encoder–decoder",
    "decoder_chart": "Training: the encoder–decoder's loss",
    # Sampling
    "next_": "Sampling: the next-token bars (column)",
    "step_forced_": "Sampling: the token forced in step mode (model)",
    "kv_run": "Sampling: generate with and without the KV cache",
    # Adapting and Serving
    "lora_memory": "Adapting: LoRA's parameters and optimizer memory",
    "lora_heatmap": "Adapting: ΔW = BA as a heatmap",
    "lora_spectrum": "Adapting: ΔW's singular values",
    "lora_start": "Adapting: start the LoRA and full fine-tuning runs",
    "tuning_SFT_model": "Tuning: which SFT model is compared (shipped, the sidebar's, a run)",
    "tuning_DPO_model": "Tuning: which DPO model is compared (shipped, the sidebar's, a run)",
    "tuning_dpo_from": "Tuning: the SFT model a DPO run starts from",
    "tuning_sft_upload": "Tuning: your own SFT set (JSON Lines)",
    "tuning_dpo_upload": "Tuning: your own DPO set (JSON Lines)",
    "tuning_sft_start": "Tuning: start an SFT run",
    "tuning_dpo_start": "Tuning: start a DPO run",
    "tuning_probabilities": "Tuning: the chart of an answer's token probabilities under each model",
    "tuning_dpo_shipped": "Tuning: the shipped DPO run's chart",
    "tuning_dpo_run_": "Tuning: a DPO run's chart (one per run)",
    "lora_curves": "Adapting: their loss curves",
    "delta_matrix": "Adapting: the matrix of a picked run's ΔW",
    "delta_spectrum": "Adapting: its singular values",
    "quant_errors": "Adapting: the rounding error per matrix",
    "quant_histogram": "Adapting: the weights before and after rounding",
    "qat_start": "Adapting: start the QAT and float runs",
    "qat_curves": "Adapting: the QAT and float runs' loss curves",
    "task_start": "Adapting: start the three classifier runs",
    "task_loss": "Adapting: the classifier runs' loss",
    "task_accuracy": "Adapting: the classifier runs' held-out accuracy",
    "task_names": "Adapting: first names for a fine-tuned checkpoint's classifier",
    "task_versus": "Adapting: held-out accuracy of prompting and of the fine-tuning runs, side by side",
    "memory_bars": "Adapting: activations saved for the backward pass",
    "memory_start": "Adapting: start the memory-switch runs (three, four on CUDA)",
    "memory_curves": "Adapting: their loss curves",
    "zero_bars": "Adapting: what each ZeRO stage keeps per process",
    "kv_growth": "Serving: the KV cache growing while generating",
    "page_blocks": "Serving: the block tables",
    "batching": "Serving: static vs continuous batching",
}

#: Widgets whose value survives navigation (``**keep(name)``, key ``keep_<name>``): the Training page's settings.
KEPT: dict[str, str] = {
    "runs_on_chart": "Training: the runs on the comparison chart",
}

#: characters any text widget takes (a smaller ``max_chars`` of its own wins). ui.routing has every value a browser
#: sends checked against it before a page reads it: a longer (forged) text is refused with a one-line notice, so
#: no page tokenizes 20 MB in the server's script thread. A real paste up to this size (a book chapter) reaches its
#: page, which bounds what it tokenizes itself: the Tokens page reads the first 100,000 characters and says so.
MAX_WIDGET_TEXT = 2_000_000

_LINK_WIDGETS: set[str] = set()  # ui.link_params.PARAMS's names: those widgets' keys (registered by ui.share)


def register_link_widgets(names: set[str]) -> None:
    """ui.share declares the link's parameters, whose names are their widgets' keys."""
    _LINK_WIDGETS.update(names)


def widget(name: str, *parts: object) -> str:
    """The key of the declared widget ``name``; a family's key joins ``parts`` to it with ``_``.

    >>> widget("lora_heatmap"), widget("edit_", "Q"), widget("run_stop_", "single", "ab12")
    ('lora_heatmap', 'edit_Q', 'run_stop_single_ab12')
    """
    if name not in WIDGETS:
        raise KeyError(f"{name!r} is not a declared widget key: add it to ui.state.WIDGETS")
    if name.endswith("_") != bool(parts):
        raise KeyError(f"{name!r} {'needs' if name.endswith('_') else 'takes no'} parts")
    return name + "_".join(str(part) for part in parts)


def kept(name: str) -> str:
    """The key of a widget whose value survives navigation (:func:`ui.widgets.keep`)."""
    if name not in KEPT:
        raise KeyError(f"{name!r} is not declared in ui.state.KEPT")
    return KEEP + name


KEEP = "keep_"


def _declared(key: str) -> bool:
    return (
        key in _LINK_WIDGETS
        or key in WIDGETS
        or (key.startswith(KEEP) and key[len(KEEP) :] in KEPT)
        or any(key.startswith(name) for name in WIDGETS if name.endswith("_"))
    )


def value(key: str, default: Any = None) -> Any:
    """The current value of a widget (a declared key: :func:`widget`, a link parameter, or a family's key)."""
    if not _declared(key):
        raise KeyError(f"{key!r} is not a declared widget key")
    return st.session_state.get(key, default)


def set_value(key: str, new: Any) -> None:
    """Give a widget a value before it is drawn (in a callback, or before the widget's line runs)."""
    if not _declared(key):
        raise KeyError(f"{key!r} is not a declared widget key")
    st.session_state[key] = new


def follow_default(key: str, tokenizer, *texts: str) -> str:
    """The default of the text box ``key`` for the picked model: the first of ``texts`` its tokenizer reads whole
    (:func:`llmviz.lessons.defaults.first_read`: the manual's sentence, or a name for a model of first names).

    A box keeps its text when the model changes (Streamlit keeps a keyed widget's value, whatever its default); one
    that still holds another of ``texts`` (nothing the student typed) is given this model's, so a names model picked
    after the page opened shows a name, not the letters it reads of the manual's sentence. A box the student emptied
    stays empty (Sampling's prompt: an empty one is a start of its own)."""
    default = first_read(tokenizer, *texts)
    if has_value(key) and value(key) and value(key) != default and value(key) in texts:
        set_value(key, default)
    return default


def has_value(key: str) -> bool:
    """Does the widget ``key`` have a value in this session yet (drawn once, or given one)?"""
    if not _declared(key):
        raise KeyError(f"{key!r} is not a declared widget key")
    return key in st.session_state


def keep_kept_values() -> None:
    """Widgets declared in :data:`KEPT` keep their value when the student visits another page.

    Streamlit forgets a widget's value in any run that does not draw it; writing the value back in every run
    (app.py calls this before any page draws) keeps it."""
    for name in KEPT:
        key = KEEP + name
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
