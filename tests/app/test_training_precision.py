"""The Training page's precision: a run trains in the precision picked, and the page says which."""

from llmviz.jobs.manager import default_manager
from tests.test_app_pages import assert_clean, finish_jobs, run_page
from tests.test_page_interactions import by_label


def test_a_run_trains_in_the_precision_picked_and_the_page_names_it():
    at = run_page("stages/training.py", corpus="names")
    precision = by_label(at.selectbox, "Precision")
    assert precision.options == ["float32", "bfloat16 (autocast)"]  # this server computes on the CPU: no fp16
    assert precision.value == "float32"  # auto: float32 on a CPU (bf16 on a GPU that has it)
    precision.set_value("bf16")
    by_label(at.selectbox, "Model").set_value("gpt-nano")
    by_label(at.radio, "Tokenizer").set_value("char")
    by_label(at.slider, "Steps").set_value(10)
    by_label(at.slider, "Sample every (steps)").set_value(0)
    at.button(key="train").click().run()
    assert_clean(at)
    at = finish_jobs(at)
    assert_clean(at)
    [job] = default_manager().jobs(at.session_state["_llmviz_session_id"])
    assert job.status().state == "finished" and job.info.config.precision == "bf16"
    assert any("bfloat16 (autocast)" in caption.value for caption in at.caption)
