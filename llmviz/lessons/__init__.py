"""The numbers each stage of the app draws, computed without Streamlit: forward passes for the pages
(:mod:`~llmviz.lessons.forward`), embeddings and word2vec (:mod:`~llmviz.lessons.embeddings`), a model's anatomy
(:mod:`~llmviz.lessons.anatomy`), architecture switches and races (:mod:`~llmviz.lessons.architectures`),
predict-then-reveal questions (:mod:`~llmviz.lessons.quiz`) and the adapting stage (:mod:`~llmviz.lessons.adapting`)."""
