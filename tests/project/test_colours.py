"""Colour is never the only signal, and text on colour is readable (issue 70), checked without a browser.

Every categorical palette the charts use keeps its categories apart, and every heatmap colour scale keeps its order,
for normal vision and under simulated deuteranopia, protanopia and tritanopia (Machado et al. 2009 at full
severity, through colorspacious); distances are CAM02-UCS ΔE (about 1 is a just-noticeable difference). Text drawn on
coloured chips, and the theme's own text colours, meet WCAG 2.1 AA's 4.5:1, computed here with WCAG's formula.
"""

import itertools
import re
import tomllib

import numpy as np
import plotly.colors
import pytest
from colorspacious import cspace_convert, deltaE

from tests.support.contrast import contrast, rgb
from tests.support.paths import ROOT
from ui import colours
from ui.panels import inside_lens, runs, sampling, tuning

VISIONS = {"normal": None, "deuteranopia": "deuteranomaly", "protanopia": "protanomaly", "tritanopia": "tritanomaly"}
WHITE = (255, 255, 255)
THEME = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["theme"]
APART = 10.0  # two categories: at least this far apart in CAM02-UCS (the Okabe–Ito set's worst pair is 11)
NEIGHBOURS_APART = 12.0  # two neighbouring token chips
ENDS_APART = 30.0  # the two ends of a sequential scale
SIDES_APART = 20.0  # a diverging scale's two sides, at the same distance from zero (RdBu's worst: 24, protanopia)


def seen(colour, vision: str) -> np.ndarray:
    """``colour`` (sRGB 0-1) as someone with ``vision`` sees it."""
    value = np.array(rgb(colour)) / 255
    kind = VISIONS[vision]
    if kind is None:
        return value
    simulated = cspace_convert(value, {"name": "sRGB1+CVD", "cvd_type": kind, "severity": 100}, "sRGB1")
    return np.clip(simulated, 0, 1)


def distance(a, b, vision: str) -> float:
    return float(deltaE(seen(a, vision), seen(b, vision), input_space="sRGB1", uniform_space="CAM02-UCS"))


def lightness(colour, vision: str) -> float:
    """J' of CAM02-UCS: how light the colour looks (0 black, 100 white)."""
    return float(cspace_convert(seen(colour, vision), "sRGB1", "CAM02-UCS")[0])


def over(colour, alpha: float, background=WHITE) -> tuple[int, int, int]:
    """``colour`` at opacity ``alpha`` over ``background``."""
    return tuple(round(alpha * c + (1 - alpha) * b) for c, b in zip(rgb(colour), rgb(background)))


def test_the_helpers_against_known_values():
    """WCAG's extremes and a published ratio; a grey is seen as itself under every deficiency."""
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)  # the lightest grey that passes AA
    for vision in VISIONS:
        assert distance("#808080", "#808080", vision) == pytest.approx(0, abs=0.5)
    assert distance("#ff0000", "#00ff00", "normal") > 40 > distance("#ff0000", "#00ff00", "deuteranopia") / 1.0


@pytest.mark.parametrize("vision", VISIONS)
def test_categorical_colours_stay_apart_and_off_the_white_page(vision):
    """Runs' curves (the Training page, the class view) and the induction run's heads: every pair of categories,
    and each from the page, at least APART."""
    assert runs.COLOURS is colours.CATEGORICAL
    drawn = [*colours.CATEGORICAL, "#ffffff"]
    worst = min((distance(a, b, vision), a, b) for a, b in itertools.combinations(drawn, 2))
    assert worst[0] >= APART, f"{worst[1]} and {worst[2]} are {worst[0]:.1f} apart for {vision}"


@pytest.mark.parametrize("vision", VISIONS)
def test_neighbouring_token_chips_stay_apart(vision):
    """Token chips take the palette in turn: each chip and the next (the last and the first too) stay apart."""
    chips = colours.PALETTE
    gaps = [(distance(chips[i], chips[(i + 1) % len(chips)], vision), i) for i in range(len(chips))]
    worst = min(gaps)
    assert worst[0] >= NEIGHBOURS_APART, f"chips {worst[1]} and {worst[1] + 1} are {worst[0]:.1f} apart ({vision})"


def test_text_on_chips_is_readable():
    """The page's text on every token chip, on a generated token at probability 1 (Sampling), on Tuning's chips at
    their strongest, and each Tuning stage's name on white."""
    text = THEME["textColor"]
    backgrounds = {f"chip {c}": c for c in colours.PALETTE}
    backgrounds["a generated token at p = 1"] = sampling.PROBABILITY_SHADE
    backgrounds["a token at the worst loss (Inside)"] = inside_lens.LOSS_SHADE
    backgrounds |= {f"a {name} chip at p = 1": over(colour, 0.55) for name, colour in tuning.STAGE_COLOURS.items()}
    low = {name: round(contrast(text, bg), 2) for name, bg in backgrounds.items() if contrast(text, bg) < 4.5}
    assert not low, f"text under 4.5:1 on {low}"
    names = {name: round(contrast(c, WHITE), 2) for name, c in tuning.STAGE_COLOURS.items() if contrast(c, WHITE) < 4.5}
    assert not names, f"stage names under 4.5:1 on white: {names}"


def test_the_themes_text_colours_are_readable():
    """Streamlit draws captions, help and placeholders in the text colour at 60% opacity; buttons of the primary
    colour carry white text; gray text and llmviz's own secondary text on white."""
    assert contrast(over(THEME["textColor"], 0.6), WHITE) >= 4.5
    assert contrast(THEME["primaryColor"], WHITE) >= 4.5
    assert contrast(THEME["linkColor"], WHITE) >= 4.5
    assert contrast(THEME["grayTextColor"], WHITE) >= 4.5
    assert contrast(over(THEME["codeTextColor"], 0.6), WHITE) >= 4.5  # inline code in a caption
    assert contrast(colours.MUTED_TEXT, WHITE) >= 4.5
    assert contrast(colours.NUMBER_TEXT, WHITE) >= 4.5  # the number under a shaded token (issue 70 item 3)


# Every colour scale the pages use, by kind. A scale not named here fails test_every_colour_scale_is_known.
SEQUENTIAL = {"Blues", "Viridis"}  # magnitude: lighter (or darker) all the way, for every vision
DIVERGING = {"RdBu", "RdBu_r"}  # sign: two ends apart, the middle lightest
# Twilight is cyclic (RoPE's angles wrap at 2π: both ends are the same colour on purpose); Turbo colours Serving's
# blocks by request, the request's number written in every block (the colour is not the only signal)
EXEMPT = {"Twilight", "Turbo"}


def scales_in_source() -> set[str]:
    found = {"Blues"}  # ui.charts.heatmap's default
    for path in [*(ROOT / "ui").rglob("*.py"), *(ROOT / "stages").rglob("*.py")]:
        found |= set(re.findall(r"colorscale=\"(\w+)\"", path.read_text(encoding="utf-8")))
    return found


def samples(name: str, count: int = 11) -> list[str]:
    return plotly.colors.sample_colorscale(plotly.colors.get_colorscale(name), np.linspace(0, 1, count).tolist())


def test_every_colour_scale_is_known():
    assert scales_in_source() <= SEQUENTIAL | DIVERGING | EXEMPT, scales_in_source() - SEQUENTIAL - DIVERGING - EXEMPT


@pytest.mark.parametrize("vision", VISIONS)
@pytest.mark.parametrize("name", sorted(SEQUENTIAL))
def test_a_sequential_scale_keeps_its_order(name, vision):
    """A larger value is always lighter (or always darker): its order can be read without hue."""
    light = [lightness(c, vision) for c in samples(name)]
    steps = np.diff(light)
    assert (steps > 0).all() or (steps < 0).all(), f"{name} for {vision}: lightness {np.round(light, 1)}"
    assert distance(samples(name)[0], samples(name)[-1], vision) >= ENDS_APART


@pytest.mark.parametrize("vision", VISIONS)
@pytest.mark.parametrize("name", sorted(DIVERGING))
def test_a_diverging_scale_keeps_its_sign(name, vision):
    """A negative and a positive value of the same size apart (from the ends to ±0.4 of the range), and the middle
    (zero) lighter than either end."""
    colours = samples(name)
    sides = [(distance(colours[i], colours[-1 - i], vision), i) for i in range(4)]
    assert min(sides)[0] >= SIDES_APART, f"{name} for {vision}: the sides {sides}"
    middle = lightness(colours[len(colours) // 2], vision)
    assert middle > lightness(colours[0], vision) and middle > lightness(colours[-1], vision)
