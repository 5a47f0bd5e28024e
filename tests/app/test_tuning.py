"""The Tuning page under AppTest: it opens on the shipped base, SFT and DPO models answering a held-out question, the
answers and the figures drawn from the library's own numbers (llmviz.lessons.tuning), and a typed question is
answered by all three."""

from __future__ import annotations

from llmviz.lessons import tuning
from tests.support.pages import assert_clean, by_label, run_page, texts


def test_the_page_opens_on_the_three_models_answering_a_held_out_question():
    at = run_page("stages/tuning.py")
    assert_clean(at)
    question = by_label(at.selectbox, "A held-out question").value
    assert question in tuning.example_prompts()
    assert "Greedy." in texts(at.caption)
    assert "The prompt, in the template" in texts(at.markdown)


def test_a_typed_question_is_answered_and_a_long_one_is_bounded():
    at = run_page("stages/tuning.py")
    by_label(at.text_input, "Your own question").set_value("What does the with statement do?").run()
    assert_clean(at)
    assert any("What does the with statement do?" in code.value for code in at.code)


def test_a_dpo_run_is_the_labs_and_its_chart_is_drawn_from_the_lab_after_a_restart(fresh_session_jobs):
    """Issue 59 §3 and issue 56 §1: a DPO run started on the page is a lab run of kind "dpo"; its chart (the chosen and
    rejected ratios, the margin, the accuracy) is drawn from the lab's record, so it is still there when the job is
    gone from the server's memory (a restart); each point equals the trainer's own metrics at that step."""
    import json

    from llmviz.jobs.default import default_manager
    from llmviz.lab.service import default_lab
    from tests.support.pages import JOB_TIMEOUT
    from tests.support.waiting import wait_for
    from ui.stages import ROOT

    at = run_page("stages/tuning.py", tuning_tab="Tune your own")
    by_label(at.slider, "DPO steps").set_value(10).run()
    next(button for button in at.button if button.label == "Start a DPO run").click().run()
    assert_clean(at)
    session = at.session_state["_llmviz_session_id"]
    [job] = default_manager().jobs(session)
    assert job.wait(timeout=JOB_TIMEOUT) and job.status().state.value == "finished", job.status().describe()
    trained = {m.step: m for m in job.status().metrics}

    def kept_whole():  # the keeper writes the run's last points and its end as the job ends (its own thread)
        return any(
            r.id == job.id and r.state == "finished" and r.step == 10 for r in default_lab().registry.records.all_runs()
        )

    wait_for(kept_whole)
    default_manager().sessions.end_session(session)  # a restart: no job in memory, only the lab's record
    assert default_manager().get(session, job.id) is None
    at.switch_page(str(ROOT / "stages/tokens.py")).run()  # a reload: the student comes back to the DPO tab
    at.session_state["tuning_tab"] = at.query_params["tuning_tab"] = "DPO: the chosen over the rejected"
    at.switch_page(str(ROOT / "stages/tuning.py")).run()
    assert_clean(at)
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    titles = [str(c["layout"].get("title", {}).get("text", "")) for c in charts]
    found = [c for c, title in zip(charts, titles) if job.label in title]
    assert len(found) == 1, (job.label, titles)
    mine = found[0]
    drawn = {trace["name"]: dict(zip(trace["x"], trace["y"])) for trace in mine["data"]}
    margin = drawn["reward margin β(r_w − r_l)"]
    assert sorted(margin) == sorted(trained) and len(margin) == 10
    for step, metrics in trained.items():
        assert margin[step] == metrics.margin
        assert drawn["chosen: log π − log π_ref"][step] == metrics.chosen_ratio
        assert drawn["preference accuracy (batch)"][step] == metrics.accuracy


def test_a_picked_model_that_is_no_gpt_is_said_before_the_shipped_gpt_is_tuned_instead():
    """The tab headed "SFT of the sidebar's model (Shipped GPT · Python manual)" under a sidebar that showed a names
    model, and said nothing: it says why the shipped GPT is tuned."""
    at = run_page("stages/tuning.py", tuning_tab="Tune your own", _picker_selected="shipped:names-transformer")
    assert_clean(at)
    assert any("An SFT run starts from a GPT" in info.value and "names\\-transformer" in info.value for info in at.info)
    assert "**SFT** of the sidebar's model (Shipped GPT · Python manual)" in texts(at.markdown)


def test_the_token_chart_shows_each_token_itself_even_repeated():
    """Issue 72 §7: an answer with a repeated token ('*' seventeen times in a markdown list) reads as its tokens on the
    axis, not '* (2)' … '* (17)': a column per position, labelled with the token, its position said on hover."""
    from ui.panels.tuning import probabilities_figure

    tokens = ["*", " a", "\n", "*", " b", "\n", "*"]
    answer = tuning.ScoredAnswer(
        model="tuned",
        text="".join(tokens),
        tokens=tokens,
        ended=True,
        probabilities={"base": [0.5] * 7, "tuned": [0.9] * 7},
    )
    figure = probabilities_figure(answer)
    assert list(figure.layout.xaxis.ticktext) == ["*", " a", "↵", "*", " b", "↵", "*"]
    assert list(figure.layout.xaxis.tickvals) == list(figure.data[0].x) == list(range(7))
    assert "token %{x}" in figure.data[0].hovertemplate
