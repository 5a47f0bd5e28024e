"""``python -m llmviz`` (or ``llmviz``): the parser and the small commands (:mod:`~llmviz.cli.main.main`), training and
sampling (:mod:`~llmviz.cli.main.train`), adapting (:mod:`~llmviz.cli.main.adapt`)."""
