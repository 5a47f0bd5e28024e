// Small helpers every part of the flow uses: make an element (HTML or SVG), set text, format a number, colour a
// value. Student text (the tokens) only ever goes through `text`, which sets textContent, never HTML.

const SVG = "http://www.w3.org/2000/svg";

// A new element `tag` with `attrs`, appended to `parent` when given; `svg`: in the SVG namespace.
export function el(tag, attrs, parent, svg) {
  const node = svg ? document.createElementNS(SVG, tag) : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  if (parent) parent.appendChild(node);
  return node;
}

// The same, holding the text `value` (as text: never parsed as HTML).
export function text(tag, value, attrs, parent, svg) {
  const node = el(tag, attrs, parent, svg);
  node.textContent = value;
  return node;
}

// fmt(0.12345) is "0.123"; fmt(2, 1) is "2.0".
export function fmt(x, digits) {
  return Number(x).toFixed(digits === undefined ? 3 : digits);
}

// A colour for t in [0, 1]: 0 pale, 1 deep blue (clamped outside).
export function heat(t) {
  const v = Math.max(0, Math.min(1, t));
  const r = Math.round(235 - 200 * v);
  const g = Math.round(242 - 150 * v);
  const b = Math.round(250 - 60 * v);
  return `rgb(${r},${g},${b})`;
}
