"""The colours llmviz draws with, chosen so that every student reads them (issue 70, docs/accessibility.md):
categories that stay apart under every colour-vision deficiency, and text at WCAG AA's 4.5:1 on every background it
is drawn on. ``tests/project/test_colours.py`` measures both (CAM02-UCS distances, WCAG's contrast formula).
"""

# Token chips: a light and a mid tone in turn, so two neighbouring chips differ in lightness as well as hue and stay
# apart under every colour-vision deficiency (CAM02-UCS distance >= 13 between neighbours, the last and the first
# included), with the page's text >= 7.8:1 on every one (tests/project/test_colours.py).
PALETTE = ["#dbe4ff", "#ffc078", "#d3f9d8", "#b197fc", "#fff3bf", "#74c0fc", "#ffe3e3", "#8ce99a"]
# Lines and markers of several categories (runs, heads): Okabe and Ito's colour-blind-safe set, its yellow (too light
# on white) replaced by Tol's wine: every pair >= 11 apart in CAM02-UCS under each deficiency, and from the white page.
CATEGORICAL = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#882255"]
MUTED_TEXT = "#5c5f6a"  # secondary text and arrows: 6.4:1 on white (#868e96 was 3.3:1)
NUMBER_TEXT = "#495057"  # the number written under a shaded token (ui.charts.token_with_number): 8:1 on white
