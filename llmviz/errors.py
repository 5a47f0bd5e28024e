"""Errors that a page shows to a student with ``st.error`` (never a traceback).

Every error llmviz raises on purpose is an :class:`LlmvizError`; its message is
written for the person at the keyboard: what went wrong and what to do.
"""


class LlmvizError(Exception):
    """Base class: the message is meant to be shown as it is."""


class UploadError(LlmvizError):
    """An uploaded file cannot be used as a text corpus."""


class CorpusUnavailable(LlmvizError):
    """A corpus cannot be loaded (offline, checksum mismatch, unknown name)."""


class ConfigError(LlmvizError, ValueError):
    """A model or training configuration that cannot work."""


class CheckpointError(LlmvizError):
    """A checkpoint that is missing, truncated, mismatched or not safetensors."""


class TrainingDiverged(LlmvizError):
    """The loss became NaN or exploded; the message says what to change."""
