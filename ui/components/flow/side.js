// Beside the picture (Flow's methods): the next-token bars, and the temperature, top-k and top-p sliders that
// reshape the last position's bars in the browser (sampling.js, on the logits the payload holds).

import { el, fmt, text } from "./dom.js";
import { sampled } from "./sampling.js";

export const side = {
  drawSide() {
    const box = this.side;
    const d = this.data;
    this.barTitle = text("div", "", { class: "lvf-bartitle" }, box);
    this.bars = el("div", { class: "lvf-bars" }, box);
    this.barRows = [];
    const controls = el("div", { class: "lvf-sampling" + (this.compact ? " lvf-hidden" : "") }, box);
    this.temperature = 1;
    this.topK = 0;
    this.topP = 1;
    const slider = (label, [min, max, step, value], on, show) => {
      const row = el("label", { class: "lvf-slider" }, controls);
      text("span", label, {}, row);
      const range = { type: "range", min: String(min), max: String(max), step: String(step), value: String(value) };
      const input = el("input", { ...range, "data-control": label }, row);
      input.setAttribute("aria-label", label);
      const out = text("span", show(value), { class: "lvf-val" }, row);
      input.oninput = () => {
        on(Number(input.value));
        out.textContent = show(Number(input.value));
        this.drawBars();
      };
      return input;
    };
    slider("Temperature", [0.1, 2, 0.05, 1], (v) => (this.temperature = v), (v) => fmt(v, 2));
    const most = Math.min(50, d.last.logits.length);
    slider("Top-k", [0, most, 1, 0], (v) => (this.topK = v), (v) => (v ? String(v) : "off"));
    slider("Top-p", [0.05, 1, 0.05, 1], (v) => (this.topP = v), (v) => (v >= 1 ? "off" : fmt(v, 2)));
    this.sideNote = text("div", "", { class: "lvf-note" }, box);
    this.drawBars();
  },

  distribution() {
    return sampled(this.data.last.logits, this.temperature, this.topK, this.topP);
  },

  // The rows the bars show: the lit token's five most likely next tokens at temperature 1, or (no token lit, or
  // the last one) the last position's, reshaped by the sliders; `shown` keeps the last position's probabilities.
  barRowsNow() {
    const d = this.data;
    const T = d.tokens.length;
    const position = this.hot === null ? T - 1 : this.hot;
    if (position !== T - 1) {
      return {
        title: `What position ${position} predicts`,
        rows: d.next.tokens[position].map((tok, r) => [tok, d.next.probs[position][r]]),
        note: `After “${d.tokens[position]}” (position ${position}), at temperature 1. Temperature, top-k and ` +
          "top-p reshape the last position's bars.",
      };
    }
    const { probs, kept } = this.distribution();
    this.shown = Array.from(probs.slice(0, d.last.tokens.length));
    const omitted = d.last.omitted ? ` (the ${d.last.omitted.toLocaleString()} lowest logits are not sent: ` +
      `${fmt(100 * d.last.omitted_share, 2)}% at temperature 1)` : "";
    return {
      title: "Next token",
      rows: d.last.tokens.map((tok, r) => [tok, this.shown[r]]),
      note: `After “${d.tokens[T - 1]}”: softmax(logits / ${fmt(this.temperature, 2)}) over ` +
        `${kept.toLocaleString()} kept token${kept === 1 ? "" : "s"}${omitted}.`,
    };
  },

  drawBars() {
    const { title, rows, note } = this.barRowsNow();
    this.barTitle.textContent = title;
    // the rows are made once and updated in place: a hover each frame changes texts and widths, nothing else
    while (this.barRows.length < rows.length) {
      const row = el("div", { class: "lvf-bar" }, this.bars);
      const tok = text("span", "", { class: "lvf-bartok" }, row);
      const fill = el("span", { class: "lvf-fill" }, el("span", { class: "lvf-track" }, row));
      const pct = text("span", "", { class: "lvf-pct" }, row);
      this.barRows.push({ row, tok, fill, pct });
    }
    const max = Math.max(...rows.map((r) => r[1]), 1e-9);
    this.barRows.forEach((bar, r) => {
      bar.row.style.display = r >= rows.length ? "none" : "";
      if (r >= rows.length) return;
      const [tok, p] = rows[r];
      bar.row.classList.toggle("lvf-cut", p === 0);
      if (bar.tok.textContent !== tok) bar.tok.textContent = tok;
      bar.fill.style.width = `${(100 * p) / max}%`;
      bar.pct.textContent = p === 0 ? "cut" : `${fmt(100 * p, 1)}%`;
    });
    this.sideNote.textContent = note;
  },
};
