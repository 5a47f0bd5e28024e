// The picture itself (Flow's methods): an SVG with a column per stage and a row per token. Each token's residual
// stream is a line across; each stage a dot per token (its vector's norm as colour); a block's attention the lines
// from the tokens each token reads; the logits and the most likely next token at the right.

import { el, fmt, heat, text } from "./dom.js";
import { columnTitle, layout } from "./layout.js";

export const picture = {
  drawSvg() {
    const d = this.data;
    const L = layout(d, Math.max(480, this.root.clientWidth - (this.big ? 312 : 272)), this.big);
    this.L = L;
    const svg = el("svg", { width: L.width, height: L.height, class: "lvf-svg", role: "group" }, this.svgBox, true);
    svg.setAttribute("aria-label", `The forward pass of ${d.tokens.length} tokens through ${d.stages.length} stages`);
    this.svg = svg;
    this.arrowId = null; // links.js defines its arrowhead in this SVG when a stage reads earlier positions
    const T = d.tokens.length;
    this.byToken = Array.from({ length: T }, () => []);
    this.byStage = d.stages.map(() => []);
    this.attnLines = [];
    const gHead = el("g", { class: "lvf-heads" }, svg, true); // first: the columns lie under the lines and dots
    const gLines = el("g", { class: "lvf-lines" }, svg, true);
    const gStream = el("g", { class: "lvf-stream" }, svg, true);
    const gNodes = el("g", { class: "lvf-nodes" }, svg, true);
    // the residual stream: one line a token from the first vector to the probabilities
    const x1 = L.xs[1] ?? L.labelW;
    const x2 = L.xs[L.xs.length - 1];
    for (let i = 0; i < T; i += 1) {
      const line = el("line", { x1, x2, y1: L.y(i), y2: L.y(i), class: "lvf-res" }, gStream, true);
      this.byToken[i].push(line);
    }
    d.stages.forEach((s, k) => {
      this.drawHeader(gHead, s, k);
      if (s.kind === "tokens") this.drawTokens(gNodes, k);
      else if (s.kind === "attn") this.drawAttention(gLines, gNodes, s, k);
      else if (s.kind === "logits" || s.kind === "probs") this.drawOutputs(gNodes, s, k);
      else this.drawVectors(gNodes, s, k);
      if (s.reads) this.drawReads(gLines, s, k);
    });
    this.pulseLayer = el("g", { class: "lvf-pulses" }, svg, true);
  },

  drawHeader(g, s, k) {
    const L = this.L;
    const x = L.xs[k];
    const clickable = s.kind === "attn" || s.kind === "mlp";
    // one stop of the Tab key for all the columns (the arrow keys move between them): a roving tabindex
    const stop = k === 0 ? "0" : "-1";
    const attrs = { class: `lvf-col lvf-col-${s.kind}`, tabindex: stop, role: "button", "data-stage": String(k) };
    const head = el("g", attrs, g, true);
    head.setAttribute("aria-label", `${s.title}, ${s.shape}` +
      (clickable ? ": press Enter to open its heads and MLP" : ""));
    const [line1, line2] = columnTitle(s, this.data.model);
    const box = { x: x - L.colW / 2 + 2, y: 2, width: L.colW - 4, height: L.height - 4, rx: 6, class: "lvf-colbg" };
    el("rect", box, head, true);
    const sub = this.big ? 36 : 29;
    text("text", line1, { x, y: this.big ? 18 : 15, class: "lvf-coltitle", "text-anchor": "middle" }, head, true);
    text("text", line2, { x, y: sub, class: "lvf-colsub", "text-anchor": "middle" }, head, true);
    head.addEventListener("click", () => this.pick(k));
    head.addEventListener("keydown", (e) => this.columnKey(e, k));
    head.addEventListener("mouseenter", () => this.tipStage(s));
    head.addEventListener("focus", () => this.tipStage(s));
    this.byStage[k].push(head);
  },

  drawTokens(g, k) {
    const d = this.data;
    const L = this.L;
    d.tokens.forEach((tok, i) => {
      // one stop of the Tab key for all the tokens (the arrow keys move between them), the first one's
      const at = { x: L.labelW - 8, y: L.y(i) + 4, "text-anchor": "end", class: "lvf-token", tabindex: i ? "-1" : "0" };
      const label = text("text", tok, { ...at, "data-token": String(i), "aria-pressed": "false" }, g, true);
      label.setAttribute("role", "button");
      label.setAttribute("aria-label", `token ${i}: ${tok} (id ${d.ids[i]})`);
      label.addEventListener("mouseenter", () => this.light(i));
      label.addEventListener("focus", () => this.light(i));
      label.addEventListener("keydown", (e) => this.tokenKey(e, i));
      label.addEventListener("click", () => this.pin(i)); // a tap (touch has no hover) or a click keeps it lit
      this.byToken[i].push(label);
      this.byStage[k].push(label);
    });
    this.svg.addEventListener("mouseleave", () => this.light(this.pinned));
  },

  node(g, s, k, i, x, norms, max) {
    const r = Math.min(7, this.L.rowH / 2 - 2);
    const attrs = { cx: x, cy: this.L.y(i), r, class: "lvf-node", fill: heat(norms[i] / max) };
    const c = el("circle", { ...attrs, "data-stage": String(k), "data-token": String(i) }, g, true);
    c.addEventListener("mouseenter", () => {
      this.light(i);
      this.tipNode(s, i);
    });
    c.addEventListener("click", () => this.pick(k)); // a dot's click is its column's
    this.byToken[i].push(c);
    this.byStage[k].push(c);
    return c;
  },

  drawVectors(g, s, k) {
    const norms = s.main.norm;
    const max = Math.max(...norms) || 1;
    norms.forEach((_, i) => this.node(g, s, k, i, this.L.xs[k], norms, max));
  },

  // A line from each token j to each token i that reads it, as thick and dark as the heads' mean weight (lines
  // under 0.02 are left out), then the block's dots.
  drawAttention(gLines, gNodes, s, k) {
    const L = this.L;
    const block = this.data.blocks[s.layer];
    const H = block.patterns.length;
    const x0 = L.xs[k - 1];
    const x1 = L.xs[k];
    const mid = (x0 + x1) / 2;
    const T = this.data.tokens.length;
    for (let i = 0; i < T; i += 1) {
      for (let j = 0; j <= i; j += 1) {
        let w = 0;
        for (let h = 0; h < H; h += 1) w += block.patterns[h][i][j];
        w /= H;
        if (w < 0.02) continue;
        const path = el("path", {
          d: `M${x0 + 8},${L.y(j)} C${mid},${L.y(j)} ${mid},${L.y(i)} ${x1 - 8},${L.y(i)}`,
          class: "lvf-attn",
          "stroke-width": (0.6 + 3 * w).toFixed(2),
          "stroke-opacity": (0.15 + 0.6 * w).toFixed(3),
          "data-stage": String(k),
          "data-query": String(i),
          "data-key": String(j),
        }, gLines, true);
        path.dataset.w = String(w);
        this.byToken[i].push(path);
        this.byStage[k].push(path);
        this.attnLines.push(path);
      }
    }
    this.drawVectors(gNodes, s, k);
  },

  drawOutputs(g, s, k) {
    const d = this.data;
    const L = this.L;
    d.tokens.forEach((_, i) => {
      const at = { "data-stage": String(k), "data-token": String(i) };
      if (s.kind === "logits") {
        const box = { x: L.xs[k] - 7, y: L.y(i) - 6, width: 14, height: 12, rx: 2, class: "lvf-node lvf-logit" };
        const c = el("rect", { ...box, ...at }, g, true);
        c.addEventListener("mouseenter", () => {
          this.light(i);
          this.tip.textContent = `Logits at position ${i}: a score for each of the ${d.model.vocab.toLocaleString()} `
            + `tokens; the highest is ${fmt(d.next.logits[i][0], 2)} (${d.next.tokens[i][0]}).`;
        });
        this.byToken[i].push(c);
        this.byStage[k].push(c);
      } else {
        const words = `${d.next.tokens[i][0]} ${fmt(100 * d.next.probs[i][0], 0)}%`;
        const label = text("text", words, { x: L.xs[k] - 10, y: L.y(i) + 4, class: "lvf-pred", ...at }, g, true);
        label.addEventListener("mouseenter", () => this.light(i));
        this.byToken[i].push(label);
        this.byStage[k].push(label);
      }
    });
  },
};
