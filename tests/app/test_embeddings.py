"""The Embeddings page under AppTest: it opens on the map of the picked model's tokens, the looked-up token and its
nearest neighbours, with the lessons in tabs."""

import json

import torch

import ui
from llmviz.training.checkpoint import load_checkpoint
from tests.test_app_pages import assert_clean, run_page


def test_the_page_opens_on_the_map_and_the_nearest_neighbours_of_a_common_word():
    at = run_page("stages/embeddings.py")
    assert_clean(at)
    model, tokenizer, _ = load_checkpoint(ui.ROOT / "data" / "gpt-python-docs")
    typed = at.text_input(key="words").value
    assert all(len(tokenizer.encode(" " + word)) == 1 for word in typed.split())  # every word one token
    looked_up = tokenizer.encode(at.text_input(key="gpt_nn").value)
    assert len(looked_up) == 1
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)  # the first chart: the map
    traces = {trace["name"]: trace for trace in chart["data"]}
    assert set(traces) == {"common token", "your tokens", "nearest neighbours", "looked up"}
    assert traces["looked up"]["customdata"] == looked_up
    # the neighbours, recomputed with PyTorch's own cosine over the whole table
    table = model.tok_emb.weight.detach()  # the GPT's token-embedding table (V, C)
    cosines = torch.nn.functional.cosine_similarity(table, table[looked_up[0]].unsqueeze(0), dim=-1)
    cosines[looked_up[0]] = -2  # the token itself is not its own neighbour
    expected = cosines.topk(10).indices.tolist()
    shown = next(d.value for d in at.dataframe if "cosine" in d.value.columns)
    assert shown["id"].tolist() == expected
    assert sorted(traces["nearest neighbours"]["customdata"]) == sorted(expected)


def test_step_0_vs_step_n_is_offered_only_where_the_model_has_steps():
    at = run_page("stages/embeddings.py")
    assert not [h.value for h in at.subheader if h.value.startswith("Step 0 vs step N")]


def test_the_lessons_are_tabs_under_the_map():
    at = run_page("stages/embeddings.py")
    assert [tab.label for tab in at.tabs] == ["Cosine similarity", "Positions", "Word2vec", "Sentence embeddings"]
    assert [h.value[:2] for h in at.header] == ["1.", "2."]
