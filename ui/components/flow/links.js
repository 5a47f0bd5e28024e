// The lines between positions that a model without attention has (Flow's methods): an RNN's or a GRU's hidden
// state h_{t−1} carried on to position t (an arrow down its own column, and into each gate of a GRU), and a
// WaveNet's dilated inputs (level l at position t reads the level below at t − 2^l and at t). The payload says what
// each stage reads (`reads`: a stage and a position offset); a line is drawn for every read of an earlier
// position that is in the text (before it, a WaveNet reads the padding id 0, which the tooltip says).

import { el } from "./dom.js";

let markers = 0; // one arrowhead definition per picture, each with its own id

export const links = {
  drawReads(g, s, k) {
    const L = this.L;
    const index = Object.fromEntries(this.data.stages.map((stage, n) => [stage.id, n]));
    const arrow = this.arrowhead();
    const T = this.data.tokens.length;
    for (const read of s.reads) {
      const from = index[read.stage];
      if (read.offset >= 0) continue; // the same position: the row's own line
      for (let i = 0; i < T; i += 1) {
        const j = i + read.offset;
        if (j < 0) continue;
        const path = el("path", {
          d: this.linkPath(L.xs[from], L.y(j), L.xs[k], L.y(i), from === k),
          class: from === k ? "lvf-link lvf-rec" : "lvf-link",
          "marker-end": `url(#${arrow})`,
          "data-stage": String(k),
          "data-from": String(from),
          "data-query": String(i),
          "data-key": String(j),
        }, g, true);
        this.byToken[i].push(path);
        this.byStage[k].push(path);
      }
    }
  },

  // The path from (x0, y0), a vector at an earlier position, to (x1, y1): an arc beside the column when both are
  // the same column (a state carried down to the next row), else a curve between the columns.
  linkPath(x0, y0, x1, y1, same) {
    if (same) {
      const bulge = x0 + Math.min(18, this.L.colW * 0.4);
      return `M${x0 + 5},${y0 + 4} C${bulge},${y0 + 4} ${bulge},${y1 - 4} ${x1 + 6},${y1 - 5}`;
    }
    const mid = (y0 + y1) / 2;
    if (x0 > x1) return `M${x0 - 5},${y0 + 5} C${x0 - 5},${mid} ${x1 + 8},${mid} ${x1 + 6},${y1 - 6}`;
    const half = (x0 + x1) / 2;
    return `M${x0 + 7},${y0} C${half},${y0} ${half},${y1} ${x1 - 8},${y1}`;
  },

  arrowhead() {
    if (this.arrowId) return this.arrowId;
    markers += 1;
    this.arrowId = `lvf-arrow-${markers}`;
    const defs = el("defs", {}, this.svg, true);
    const marker = el("marker", {
      id: this.arrowId, viewBox: "0 0 8 8", refX: "7", refY: "4", markerWidth: "6", markerHeight: "6",
      orient: "auto-start-reverse",
    }, defs, true);
    el("path", { d: "M0,0 L8,4 L0,8 z", class: "lvf-arrowhead" }, marker, true);
    return this.arrowId;
  },
};
