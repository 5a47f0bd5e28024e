"""``python -m llmviz`` (or ``llmviz``): the parser and the small commands (:mod:`~llmviz.cli.main`), training
and sampling (:mod:`~llmviz.cli.train`), adapting (:mod:`~llmviz.cli.adapt`)."""
