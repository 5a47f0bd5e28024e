"""Where llmviz's files are: the repository it runs from (:data:`ROOT`), the shipped models and corpora in it
(:data:`DATA`), and the runs folder (:func:`runs_folder`) where the lab and the command line keep what students and
teachers train. The one place these are computed: the app (``ui.stages.ROOT``), the lab and the CLI import them.

>>> (ROOT / "llmviz" / "paths.py").is_file(), DATA == ROOT / "data"
(True, True)
"""

from __future__ import annotations

from pathlib import Path

from llmviz import settings

ROOT = Path(__file__).resolve().parent.parent  # the repository (llmviz is installed from it in editable mode)
DATA = ROOT / "data"


def runs_folder() -> Path:
    """``LLMVIZ_RUNS_DIR``, else ``runs/`` in the repository: the lab's runs (``lab/`` and ``lab.db`` in it) and the
    checkpoints the CLI writes (``--out runs/<name>``), which the model picker lists."""
    return Path(settings.get("LLMVIZ_RUNS_DIR") or ROOT / "runs")
