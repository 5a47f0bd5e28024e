"""Every page opens on its one key picture, in at most three screens (issue: pages that teach at a glance).

A student opens each page at 1400×1000 and reads, before the first picture, at most a short paragraph; the page in its
default view is at most three screens (3,000 px) tall, its lessons one click away in tabs under the picture.

The first picture is the page's first chart, or the container ``ui.sections.key_picture(page)`` for a picture drawn
in HTML (token chips, the pipeline's boxes, the architecture's boxes). The words counted are the main column's
visible text before it: the title, captions, headings, widget labels and the "Copy link" button; not what a widget
holds (a text box's text, a select box's choice), nor the names of icons. ``tests/browser/test_pages.py`` measures
every page with :func:`check_first_screen` as it opens it (one opening of each page, not two).
"""

from tests.support.browser import main_area, settled

SCREEN = (1400, 1000)
MAX_HEIGHT = 3 * SCREEN[1]  # three screens
MAX_WORDS = 60  # a short paragraph
MEASURE = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const block = document.querySelector('[data-testid="stMainBlockContainer"]');
  const first = block.querySelector('[data-testid="stPlotlyChart"], [class*="st-key-picture_"]');
  const before = [];
  const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (first && !(node.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING)) break;
    const element = node.parentElement;
    if (!element || !element.checkVisibility()) continue;
    if (element.closest('.katex-mathml, [data-testid="stIconMaterial"], textarea, [data-baseweb="select"], '
                        + '[data-testid="stMultiSelectTagsContainer"]')) continue;
    before.push(...node.textContent.split(/\\s+/).filter((word) => /\\w/.test(word)));
  }
  const top = first ? first.getBoundingClientRect().top - block.getBoundingClientRect().top : null;
  return {height: main.scrollHeight, picture: top, words: before};
}"""


def check_first_screen(page, name: str) -> None:
    """The page just opened at ``SCREEN`` starts with its picture within the first screen, after at most
    ``MAX_WORDS`` words, and is at most three screens tall."""
    # the first picture may come a moment after the page's text (a section computing it): wait for it, then settle
    main_area(page).locator('[data-testid="stPlotlyChart"], [class*="st-key-picture_"]').first.wait_for(timeout=120_000)
    measured = settled(page, MEASURE)
    assert measured["picture"] is not None, f"{name}: no chart and no key picture"
    assert measured["picture"] < SCREEN[1], f"{name}: the first picture starts {measured['picture']:.0f} px down"
    words = measured["words"]
    assert len(words) <= MAX_WORDS, f"{name}: {len(words)} words before the first picture: {' '.join(words)}"
    assert measured["height"] <= MAX_HEIGHT, f"{name} is {measured['height']} px tall"
