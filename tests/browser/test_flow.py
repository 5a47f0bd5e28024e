"""The flow (ui/components/flow/) in headless chromium, as a student uses it: hover a token and see which paths light,
open a block, press Play and watch the stages advance in order, drag temperature without a server rerun (the bars
equal torch's sampling transforms of the logits the page holds), and move the sidebar's step slider over a run's
snapshots (the bars equal that snapshot's own logits); a recurrent model's state carried from each position to the next
and a WaveNet's dilated inputs. Screenshots at 1400×1000 and, in presenter mode, 1280×720.

What Play showed and how fast frames came are watched from outside by ``flow_probe.js`` (this folder), which the
tests inject before the page loads: the flow's own modules keep no record for them."""

import re
import urllib.parse
from pathlib import Path

import pytest
import torch

from llmviz.generation import sampling
from tests.support.browser import (
    eventually,
    go,
    main_area,
    no_error_box,
    open_page,
    script_runs,
    shot,
    sidebar,
    wait_until_idle,
)

pytestmark = pytest.mark.browser

FLOW = ".lvf[data-ready='1']"
PROBE = Path(__file__).resolve().parent / "flow_probe.js"
COMPONENT = Path(__file__).resolve().parents[2] / "ui" / "components" / "flow"
VISITED = "() => window.lvfProbe.visited.slice()"
DATA = "() => document.querySelector('.lvf').lvf.data"
VIEW = "(expr) => { const v = document.querySelector('.lvf').lvf; return eval(expr); }"


def flow_state(page, expr: str):
    """``expr`` evaluated with ``v``, the page's first flow (its Flow object)."""
    return page.evaluate(VIEW, expr)


def assert_bars_are_the_models(page, model, data: dict) -> None:
    """The next-token bars the page draws are ``model``'s own probabilities after the payload's tokens (a plain
    forward pass here, no cache, in float64 softmax)."""
    with torch.no_grad():
        logits, _ = model.eval()(torch.tensor([data["ids"]]))
    probs = torch.softmax(logits[0, -1].double(), dim=-1).sort(descending=True).values[: len(data["last"]["tokens"])]
    shown = torch.tensor(flow_state(page, "v.shown"), dtype=torch.float64)
    torch.testing.assert_close(shown, probs, rtol=1e-5, atol=1e-6)


def reference_bars(logits: list[float], temperature: float, top_k: int, top_p: float, bars: int) -> torch.Tensor:
    """What llmviz.generation.sampling gives for the sent logits: temperature, then top-k, then top-p."""
    row = torch.tensor(logits, dtype=torch.float64)
    kept = sampling.top_p_filter(sampling.top_k_filter(sampling.apply_temperature(row, temperature), top_k), top_p)
    return torch.softmax(kept, dim=-1)[:bars]


def with_probe(page) -> None:
    page.add_init_script(path=str(PROBE))


@pytest.mark.suite  # the Model page's key picture as a student uses it: in README's suite, not only CI's lane
def test_hover_open_play_and_temperature_in_the_browser(app_url, browser, timings_log):
    page = open_page(browser, f"{app_url}/model", viewport=(1400, 1000), before=with_probe)
    page.wait_for_selector(FLOW)
    no_error_box(page)
    data = page.evaluate(DATA)
    stages = data["stages"]
    tokens = len(data["tokens"])
    shot(page, "flow-model-1400x1000")
    runs_before = len(script_runs(timings_log))

    # hover a token: its residual line, one dot a stage and its attention lines (to tokens before it) light up
    token = 4
    page.locator(f".lvf-token[data-token='{token}']").hover()
    hot = page.evaluate(
        "() => [...document.querySelectorAll('.lvf .lvf-hot')].map(n => [n.tagName, n.dataset.stage ?? null, "
        "n.dataset.query ?? n.dataset.token ?? null, n.dataset.key ?? null])"
    )
    lines = [h for h in hot if h[0] == "path"]
    assert lines and all(int(q) == token and int(k) <= token for _, _, q, k in lines)
    expected = {
        (k, j)
        for k, s in enumerate(stages)
        if s["kind"] == "attn"
        for j in range(token + 1)
        if sum(head[token][j] for head in data["blocks"][s["layer"]]["patterns"]) / len(data["blocks"][0]["patterns"])
        >= 0.02
    }
    assert {(int(s), int(k)) for _, s, _, k in lines} == expected  # every line it reads, no other token's
    dots = {int(s) for tag, s, t, _ in hot if tag == "circle"}
    assert dots == {k for k, s in enumerate(stages) if s["kind"] in ("embed", "attn", "mlp", "final")}
    assert page.locator(".lvf-bartitle").inner_text() == f"What position {token} predicts"
    shot(page, "flow-hover")

    # keyboard: focus moves down the tokens with the arrow keys, and lights the focused one
    page.locator(f".lvf-token[data-token='{token}']").focus()
    page.keyboard.press("ArrowDown")
    assert page.evaluate("() => document.querySelector('.lvf').dataset.hot") == str(token + 1)

    # open a block: its heads' patterns and its MLP
    attn1 = next(k for k, s in enumerate(stages) if s["kind"] == "attn" and s["layer"] == 1)
    page.locator(f".lvf-col[data-stage='{attn1}'] .lvf-coltitle").click()
    grid = page.locator(".lvf-headgrid[data-block='1']")
    grid.wait_for()
    assert grid.locator(".lvf-head").count() == data["model"]["heads"]
    assert page.locator(".lvf-mlp[data-block='1'] .lvf-bar").count() == tokens
    shot(page, "flow-block-open")
    wait_until_idle(page)  # opening a block tells Python (its state): the flow's section reruns, the block stays open
    assert page.locator(".lvf-headgrid[data-block='1']").count() == 1

    # Play at 4× speed: from the stage picked (block 1's attention) on, in order, then it stops on the last one
    runs_before = len(script_runs(timings_log))
    page.locator(".lvf-speed input").fill("4")
    seen = len(page.evaluate(VISITED))
    page.locator(".lvf-btn[data-act='play']").click()
    last = "!v.playing && v.stage === v.data.stages.length - 1"
    eventually(lambda: flow_state(page, last), what="the last stage")
    assert page.evaluate(VISITED)[seen:] == list(range(attn1 + 1, len(stages)))
    assert page.evaluate("() => window.lvfProbe.frames.length") > 0  # the pulse moved between stages
    # Show all, then Play: every stage from the tokens to the probabilities
    page.locator(".lvf-btn[data-act='all']").click()
    seen = len(page.evaluate(VISITED))
    page.locator(".lvf-btn[data-act='play']").click()
    eventually(lambda: flow_state(page, last), what="the last stage")
    assert page.evaluate(VISITED)[seen:] == list(range(len(stages)))
    # Step and Back stop on any stage
    page.locator(".lvf-btn[data-act='back']").click()
    page.locator(".lvf-btn[data-act='back']").click()
    assert page.evaluate("() => document.querySelector('.lvf').dataset.stage") == str(len(stages) - 3)
    assert page.locator(".lvf-stage").inner_text().startswith(f"Stage {len(stages) - 2}/{len(stages)}")

    # temperature, top-k and top-p reshape the bars in the browser: torch's transforms of the same logits
    page.mouse.move(5, 5)  # no token lit: the bars are the last position's
    logits = data["last"]["logits"]
    bars = len(data["last"]["tokens"])
    shown = torch.tensor(flow_state(page, "v.shown"), dtype=torch.float64)
    torch.testing.assert_close(shown, reference_bars(logits, 1.0, 0, 1.0, bars), rtol=1e-6, atol=1e-7)
    temperature = page.locator("input[data-control='Temperature']")
    temperature.focus()
    for _ in range(6):
        page.keyboard.press("ArrowLeft")  # 1.00 → 0.70
    page.locator("input[data-control='Top-k']").fill("5")
    page.locator("input[data-control='Top-k']").dispatch_event("input")
    page.locator("input[data-control='Top-p']").fill("0.9")
    page.locator("input[data-control='Top-p']").dispatch_event("input")
    reshaped = torch.tensor(flow_state(page, "v.shown"), dtype=torch.float64)
    assert flow_state(page, "[v.temperature, v.topK, v.topP]") == [0.7, 5, 0.9]
    torch.testing.assert_close(reshaped, reference_bars(logits, 0.7, 5, 0.9, bars), rtol=1e-6, atol=1e-7)
    assert not torch.allclose(reshaped, shown)
    shot(page, "flow-temperature")
    assert len(script_runs(timings_log)) == runs_before, "hover, Play and the sliders ran nothing on the server"
    no_error_box(page)


def test_presenter_mode_opens_on_the_flow(app_url, browser):
    page = open_page(browser, f"{app_url}/model?present=1", viewport=(1280, 720))
    page.wait_for_selector(FLOW)
    box = page.locator(".lvf").bounding_box()
    assert box["y"] + 200 < 720, "the flow is on the first slide"
    shot(page, "flow-presenter-1280x720")
    no_error_box(page)


def test_the_step_slider_replays_the_sentence_at_each_snapshot(app_url, browser, timings_log):
    from llmviz.lab.storage import Storage
    from llmviz.tokenizers.ids import encode
    from llmviz.tokenizers.saved import tokenizer_from_dict
    from llmviz.training.checkpoint import model_from_description
    from llmviz.training.snapshots import load_into

    training = "training?" + urllib.parse.urlencode({"steps": 60})
    page = open_page(browser, f"{app_url}/{training}", viewport=(1400, 1000))
    main_area(page).get_by_role("button", name="Train", exact=True).click()
    main_area(page).get_by_text("finished after 60 steps").first.wait_for(timeout=300_000)
    go(page, "Model")
    page.wait_for_selector(FLOW)
    assert page.evaluate(DATA)["model"]["step"] == 60
    assert main_area(page).get_by_text(re.compile(r"Step 60 of this run \(\d+ snapshots")).count() == 1
    step_slider = sidebar(page).get_by_role("slider").first
    step_slider.focus()
    page.keyboard.press("ArrowLeft")  # the snapshot before the last

    def earlier():
        data = page.evaluate(DATA) if page.locator(FLOW).count() else None
        return data if data and data["model"]["step"] not in (None, 60) else None

    data = eventually(earlier, what="the flow at an earlier snapshot")
    step = data["model"]["step"]
    wait_until_idle(page)
    # the snapshot's own weights, read here from the lab's file, give the bars the page draws
    lab = timings_log.parent / "runs" / "lab"
    # this server's earlier tests kept runs too: this run's snapshot is the newest file of that step
    path = max(lab.rglob(f"step-{step:09d}.safetensors"), key=lambda p: p.stat().st_mtime_ns)
    state, meta = Storage(lab).read_snapshot(str(path))
    model = load_into(model_from_description(meta["model"]), state)
    tokenizer = tokenizer_from_dict(meta["tokenizer"])
    ids = data["ids"]
    assert_bars_are_the_models(page, model, data)
    assert ids == encode(tokenizer, "The result is then bound to the class name.")[-len(ids) :]
    shot(page, "flow-earlier-step")
    no_error_box(page)


def test_the_shipped_transformers_steps_replay_the_sentence_at_once(app_url, browser):
    """Issue 58 §3: a shipped run's steps work at once. The shipped char transformer keeps seven earlier steps: the
    sidebar's slider moves the flow to one, and its bars are that step's own weights' (data/names-transformer/steps/,
    read here with safetensors)."""
    from safetensors.torch import load_file

    from llmviz.training.checkpoint import load_checkpoint
    from tests.support.paths import DATA as SHIPPED

    page = open_page(browser, f"{app_url}/model?model=shipped:names-transformer", viewport=(1400, 1000))
    page.wait_for_selector(FLOW)
    assert page.evaluate(DATA)["model"]["step"] == 2000
    step_slider = sidebar(page).get_by_role("slider").first
    step_slider.focus()
    page.keyboard.press("ArrowLeft")  # step 1,000

    def earlier():
        data = page.evaluate(DATA) if page.locator(FLOW).count() else None
        return data if data and data["model"]["step"] == 1000 else None

    data = eventually(earlier, what="the flow at step 1,000")
    wait_until_idle(page)
    assert main_area(page).get_by_text(re.compile(r"Step 1000 of this model's training \(8 snapshots")).count() == 1
    model, tokenizer, _ = load_checkpoint(SHIPPED / "names-transformer")
    model.load_state_dict(
        {k: t.float() for k, t in load_file(str(SHIPPED / "names-transformer/steps/step-001000.safetensors")).items()}
    )
    assert_bars_are_the_models(page, model, data)
    shot(page, "flow-shipped-step-1000")
    no_error_box(page)


ORIGIN = "http://flow.test"  # the component's folder served to a blank page by Playwright (no server, no network)


def component_page(browser, payload: dict, sig: str, viewport=(1400, 1000), big: bool = False):
    """The component alone in a blank page: its modules loaded by the browser as Streamlit loads them (main.js by
    its address, the files it imports beside it), mounted with ``payload`` as ui/panels/flow.py sends it."""
    page = browser.new_page()
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})

    def serve(route):
        name = route.request.url.removeprefix(f"{ORIGIN}/")
        if name == "index.html":
            body = (
                "<!doctype html><link rel='stylesheet' href='flow.css'>"
                "<div id='host' style='width:calc(100vw - 24px)'></div>"
                "<script type='module'>import mount from './main.js'; window.lvfMount = mount;</script>"
            )
            return route.fulfill(body=body, content_type="text/html")
        path = COMPONENT / name
        if "/" in name or not path.is_file():
            return route.fulfill(status=404)
        kind = "text/css" if name.endswith(".css") else "text/javascript"
        return route.fulfill(body=path.read_text(encoding="utf-8"), content_type=kind)

    page.route(f"{ORIGIN}/**", serve)
    page.goto(f"{ORIGIN}/index.html")
    page.wait_for_function("() => window.lvfMount !== undefined")
    page.evaluate(
        "(data) => window.lvfMount({data, parentElement: document.getElementById('host'), setStateValue: () => {}})",
        {"sig": sig, "payload": payload, "open": None, "big": big},
    )
    page.wait_for_selector(FLOW)
    return page


@pytest.mark.parametrize("preset", ["llama-style", "moe-tiny"])
def test_the_component_draws_what_a_llama_style_model_has(browser, preset):
    """The component alone (ui/components/flow/, in a blank page): RoPE instead of a position table, grouped
    key/value heads under each head's pattern, the router's experts per token when a block opens."""
    from llmviz.lessons import flow
    from llmviz.models.gpt import GPT
    from llmviz.models.presets import PRESETS
    from llmviz.tokenizers.char_word import CharTokenizer
    from llmviz.tokenizers.ids import encode

    tokenizer = CharTokenizer.train("abcdefghij ")
    config = PRESETS[preset].replace(vocab_size=tokenizer.vocab_size, context_length=16, n_layers=2)
    torch.manual_seed(0)
    payload = flow.flow_payload(GPT(config).eval(), tokenizer, encode(tokenizer, "abc defg hij"))
    page = component_page(browser, payload, preset)
    assert page.locator(".lvf-col[data-stage='1'] .lvf-colsub").text_content() == "+RoPE"
    assert "RMSNorm" in page.locator(".lvf-facts").inner_text()
    attn1 = next(k for k, s in enumerate(payload["stages"]) if s["kind"] == "attn" and s["layer"] == 1)
    page.locator(f".lvf-col[data-stage='{attn1}'] .lvf-coltitle").click()
    captions = page.locator(".lvf-head figcaption").all_inner_texts()
    group = config.n_heads // config.kv_heads
    assert captions == [f"head {h}" + (f" · K/V {h // group}" if group > 1 else "") for h in range(config.n_heads)]
    if config.n_experts:
        chosen = page.locator(".lvf-experts .lvf-chosen").count()
        assert chosen == len(payload["tokens"]) * config.experts_top_k
    shot(page, f"flow-component-{preset}")
    page.close()


LINKS = """() => [...document.querySelectorAll('.lvf-link')].map(
  (p) => [Number(p.dataset.stage), Number(p.dataset.from), Number(p.dataset.query), Number(p.dataset.key)])"""


@pytest.mark.parametrize("name", ["names-rnn", "names-gru", "names-wavenet"])
def test_a_recurrent_model_carries_its_state_and_a_wavenet_reads_dilated_positions(browser, name):
    """Issue 72 §6, the picture: an RNN's and a GRU's hidden state h_t drawn as an arrow to position t + 1's (and into
    each gate of the GRU at t + 1, drawn before its h_t); a WaveNet's level l at position t fed by the level below at t
    and t − 2^l. The lines are read back from the page and compared with what the models compute (their numbers:
    tests/unit/lessons/test_flow.py)."""
    from llmviz.lessons import flow
    from llmviz.tokenizers.ids import encode
    from llmviz.training.checkpoint import load_checkpoint
    from tests.support.paths import DATA as SHIPPED

    model, tokenizer, _ = load_checkpoint(SHIPPED / name)[:3]
    payload = flow.flow_payload(model.eval(), tokenizer, encode(tokenizer, "charlotte"))
    page = component_page(browser, payload, name)
    stages = payload["stages"]
    T = len(payload["tokens"])
    titles = [s["title"] for s in stages if s["kind"] == "hidden"]
    links = {tuple(link) for link in page.evaluate(LINKS)}
    if name == "names-wavenet":
        levels = [k for k, s in enumerate(stages) if s["title"].startswith("layers.")]
        assert [page.locator(f".lvf-col[data-stage='{k}'] .lvf-colsub").text_content() for k in levels] == [
            "dilation 1",
            "dilation 2",
            "dilation 4",
        ]
        expected = {(k, k - 1, t, t - 2**level) for level, k in enumerate(levels) for t in range(2**level, T)}
    else:
        h = titles.index("rnn.hidden") + 1
        gates = ["gru.reset_gate", "gru.update_gate", "gru.candidate"] if name == "names-gru" else []
        assert titles == ["embed.tok", *gates, "rnn.hidden"], "the gates come before the state they compute"
        readers = [titles.index(g) + 1 for g in gates] + [h]
        expected = {(k, h, t, t - 1) for k in readers for t in range(1, T)}
        assert page.locator(".lvf-rec").count() == T - 1  # the state's own arrow, position to position
    assert links == expected
    # hover the last token: the lines into it light up, no other's
    page.locator(".lvf-token").last.hover()
    lit = {tuple(link) for link in page.evaluate(LINKS.replace("'.lvf-link'", "'.lvf-link.lvf-hot'"))}
    assert lit == {link for link in expected if link[2] == T - 1}
    shot(page, f"flow-component-{name}")
    page.close()


def test_every_column_fits_and_presenter_type_is_14_px_or_more(browser):
    """Issue 72 §7: a bigram's 'next token' column inside the picture (it was cut at the right edge), and in
    presenter mode every text of the picture at 14 px or more, at 1280×720."""
    from llmviz.lessons import flow
    from llmviz.tokenizers.ids import encode
    from llmviz.training.checkpoint import load_checkpoint
    from tests.support.paths import DATA as SHIPPED

    inside = """() => { const svg = document.querySelector('.lvf-svg').getBoundingClientRect();
      const box = document.querySelector('.lvf-svgbox').getBoundingClientRect();
      return [...document.querySelectorAll('.lvf-svg text')].filter((t) => t.textContent.trim())
        .every((t) => { const b = t.getBoundingClientRect();
                        return b.left >= svg.left - 0.5 && b.right <= Math.min(svg.right, box.right) + 0.5; }); }"""
    smallest = """() => Math.min(...[...document.querySelectorAll('.lvf-svg text, .lvf-bar span, .lvf-note')]
      .filter((t) => t.textContent.trim()).map((t) => parseFloat(getComputedStyle(t).fontSize)))"""
    for name in ("names-bigram-counts", "gpt-python-docs"):
        model, tokenizer, _ = load_checkpoint(SHIPPED / name)[:3]
        payload = flow.flow_payload(model.eval(), tokenizer, encode(tokenizer, "The result is then bound to it."))
        page = component_page(browser, payload, name)
        assert page.evaluate(inside), f"{name}: a text of the picture is cut"
        page.close()
        page = component_page(browser, payload, name, viewport=(1280, 720), big=True)
        assert page.evaluate(inside), f"{name}, presenter mode: a text of the picture is cut"
        assert page.evaluate(smallest) >= 14
        shot(page, f"flow-component-{name}-presenter-1280x720")
        page.close()


@pytest.mark.parametrize("model", ["hub:gpt2", "shipped:names-gru"])
def test_the_flow_draws_gpt2_and_a_character_model(app_url, browser, model):
    """GPT-2 (the server's tiny random one, GPT-2's 50,257-token vocabulary: its top 8,192 logits are sent, the bars
    say so) and a character-level GRU (no blocks: its recorded stages)."""
    page = open_page(browser, f"{app_url}/model?" + urllib.parse.urlencode({"model": model}), viewport=(1400, 1000))
    page.wait_for_selector(FLOW)
    no_error_box(page)
    data = page.evaluate(DATA)
    if model == "hub:gpt2":
        assert data["model"]["vocab"] == 50257 and data["last"]["omitted"] == 50257 - 8192
        assert "lowest logits are not sent" in page.locator(".lvf-side .lvf-note").inner_text()
    else:
        assert data["model"]["kind"] == "other"
        assert [s["title"] for s in data["stages"] if s["kind"] == "hidden"][:2] == ["embed.tok", "gru.reset_gate"]
    # the hint speaks of blocks and attention only for a model that has them (a GRU has neither)
    tip = page.locator(".lvf-tip").inner_text()
    assert ("every block and the tokens its attention reads" in tip) == (model == "hub:gpt2"), tip
    assert ("the earlier positions it reads" in tip) == (model != "hub:gpt2"), tip
    page.locator(".lvf-token").last.hover()
    assert page.locator(".lvf-node.lvf-hot").count() >= 2  # its path lights through the stages it has
    shot(page, "flow-" + model.replace(":", "-"))
