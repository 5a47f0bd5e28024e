"""llmviz: real language models, small enough to watch, built to be read.

The package never imports streamlit; the app's pages only render what it computes.
"""

from llmviz.errors import (
    CheckpointError,
    ConfigError,
    CorpusUnavailable,
    LlmvizError,
    TrainingDiverged,
    UploadError,
)

__version__ = "0.1.0"

__all__ = [
    "CheckpointError",
    "ConfigError",
    "CorpusUnavailable",
    "LlmvizError",
    "TrainingDiverged",
    "UploadError",
    "__version__",
]
