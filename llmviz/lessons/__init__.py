"""The numbers each stage of the app draws, computed without Streamlit: one module per stage, named as the stage
(:mod:`~llmviz.lessons.model` for ``stages/model.py``, :mod:`~llmviz.lessons.inside`, :mod:`~llmviz.lessons.sampling`,
:mod:`~llmviz.lessons.serving`, :mod:`~llmviz.lessons.adapting`, …), and the parts several stages share, named for what
they are: recorded forward passes (:mod:`~llmviz.lessons.forward`), architecture switches and races
(:mod:`~llmviz.lessons.architectures`), embeddings and word2vec (:mod:`~llmviz.lessons.embeddings`) and
predict-then-reveal questions (:mod:`~llmviz.lessons.quiz`)."""
