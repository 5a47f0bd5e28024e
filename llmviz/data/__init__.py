"""Text to learn from: the built-in corpora, the downloadable ones (pinned by sha256) and uploads
(:mod:`llmviz.data.corpus`)."""
