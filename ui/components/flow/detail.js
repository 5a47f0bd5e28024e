// Under the picture (Flow's methods): a block opened into its heads' attention patterns (a canvas each) and its
// MLP (the share of neurons above zero, the strongest neurons) or its experts (the router's choice per token).

import { el, fmt, heat, text } from "./dom.js";

export const detail = {
  drawDetail() {
    const box = this.detail;
    box.replaceChildren();
    const d = this.data;
    if (this.open === null || !d.blocks[this.open]) {
      if (d.model.kind === "gpt" && !this.compact) {
        const hint = "Click a block's column (or focus it and press Enter) to open it into its heads and its MLP.";
        text("div", hint, { class: "lvf-note" }, box);
      }
      return;
    }
    const layer = this.open;
    const block = d.blocks[layer];
    const m = d.model;
    const heads = el("div", { class: "lvf-headgrid", "data-block": String(layer) }, box);
    const T = d.tokens.length;
    text("div", `Block ${layer}: ${block.patterns.length} heads, each a ${T} × ${T} pattern (row: the token reading; `
      + "column: the token read)" + (m.kv_heads !== m.heads ? `; ${m.heads / m.kv_heads} heads share each ` +
      "key/value head" : "") + (m.positions === "rope" ? "; queries and keys rotated by RoPE" : ""),
    { class: "lvf-detailtitle" }, heads);
    block.patterns.forEach((rows, h) => this.drawHead(heads, rows, h, layer));
    if (block.mlp) this.drawMlp(box, block.mlp, layer);
  },

  drawHead(heads, rows, h, layer) {
    const d = this.data;
    const group = d.model.heads / d.model.kv_heads;
    const fig = el("figure", { class: "lvf-head", "data-head": String(h) }, heads);
    const size = Math.min(160, Math.max(96, 8 * rows.length));
    const canvas = el("canvas", { width: String(size), height: String(size) }, fig);
    canvas.setAttribute("aria-label", `head ${h}'s attention pattern`);
    const ctx = canvas.getContext("2d");
    const cell = size / rows.length;
    rows.forEach((row, i) => row.forEach((w, j) => {
      ctx.fillStyle = heat(w);
      ctx.fillRect(j * cell, i * cell, Math.ceil(cell), Math.ceil(cell));
    }));
    canvas.addEventListener("mousemove", (e) => {
      const r = canvas.getBoundingClientRect();
      const i = Math.floor(((e.clientY - r.top) / r.height) * rows.length);
      const j = Math.floor(((e.clientX - r.left) / r.width) * rows.length);
      if (i < 0 || i >= rows.length || j < 0 || j > i) return;
      this.tip.textContent = `Block ${layer}, head ${h}: “${d.tokens[i]}” reads “${d.tokens[j]}” with weight ` +
        fmt(rows[i][j], 4);
    });
    text("figcaption", `head ${h}` + (group > 1 ? ` · K/V ${Math.floor(h / group)}` : ""), {}, fig);
  },

  drawMlp(box, mlp, layer) {
    const d = this.data;
    const wrap = el("div", { class: "lvf-mlp", "data-block": String(layer) }, box);
    if (mlp.experts) {
      this.drawExperts(wrap, mlp, layer);
      return;
    }
    text("div", `Block ${layer}'s MLP: the share of its ${mlp.width} neurons above zero for each token, and its ` +
      "strongest neurons", { class: "lvf-detailtitle" }, wrap);
    d.tokens.forEach((tok, i) => {
      const row = el("div", { class: "lvf-bar" }, wrap);
      text("span", tok, { class: "lvf-bartok" }, row);
      const track = el("span", { class: "lvf-track" }, row);
      el("span", { class: "lvf-fill lvf-mlpfill", style: `width:${100 * mlp.active[i]}%` }, track);
      const strongest = mlp.top[i].map((n, r) => `#${n} ${fmt(mlp.top_values[i][r], 2)}`).join(", ");
      text("span", `${fmt(100 * mlp.active[i], 0)}% · ${strongest}`, { class: "lvf-pct lvf-wide" }, row);
    });
  },

  drawExperts(wrap, mlp, layer) {
    const d = this.data;
    const E = mlp.router[0].length;
    text("div", `Block ${layer}: the router's probability for each of ${E} experts, per token; the ` +
      `${mlp.experts[0].length} chosen are outlined`, { class: "lvf-detailtitle" }, wrap);
    const grid = el("div", { class: "lvf-experts", style: `grid-template-columns: 90px repeat(${E}, 22px)` }, wrap);
    d.tokens.forEach((tok, i) => {
      text("span", tok, { class: "lvf-bartok" }, grid);
      for (let e = 0; e < E; e += 1) {
        const chosen = mlp.experts[i].indexOf(e);
        const title = `“${tok}” → expert ${e}: router ${fmt(mlp.router[i][e], 3)}` +
          (chosen >= 0 ? `, chosen with weight ${fmt(mlp.weights[i][chosen], 3)}` : "");
        const style = `background:${heat(mlp.router[i][e])}`;
        el("span", { class: "lvf-expert" + (chosen >= 0 ? " lvf-chosen" : ""), style, title }, grid);
      }
    });
  },
};
