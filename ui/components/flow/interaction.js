// Hover, focus, the keyboard and the tooltips (Flow's methods): a token lit lights its path through every stage
// (and the lines it reads); a column or a dot says what it holds; the arrow keys move between tokens and columns (one
// Tab stop for each group); Enter, Space or a tap on a token keeps it lit (touch has no hover); Enter on a block's
// column opens it (and tells Python, which keeps it open when the page is drawn again).

import { fmt } from "./dom.js";

export const interaction = {
  light(i) {
    if (i === this.hot || !this.byToken[i === null ? 0 : i]) return;
    if (this.hot !== null) for (const node of this.byToken[this.hot]) node.classList.remove("lvf-hot");
    this.hot = i;
    this.svg.classList.toggle("lvf-dim", i !== null);
    if (i !== null) for (const node of this.byToken[i]) node.classList.add("lvf-hot");
    this.root.dataset.hot = i === null ? "" : String(i);
    this.drawBars();
  },

  tipStage(s) {
    const m = this.data.model;
    let words = `${s.title}: ${s.shape}.`;
    if (s.kind === "embed") {
      words += m.positions === "rope" ? " No position vector is added: RoPE rotates each head's queries and keys by "
        + "position." : m.positions === "none" ? " No positions." : " Each token's row of the embedding table plus "
        + "its position's row.";
    }
    if (s.kind === "attn") {
      words += ` ${s.norm}, then ${m.heads} heads read earlier tokens; their output is added to the residual stream.`;
    }
    if (s.kind === "mlp") {
      const what = m.experts ? `the router sends each token to ${m.top_k} of ${m.experts} experts`
        : m.mlp === "swiglu" ? "a SwiGLU MLP" : "a GELU MLP";
      words += ` ${s.norm}, then ${what}; its output is added to the residual stream.`;
    }
    if (s.formula) words += ` ${s.formula}: ${this.readsInWords(s)}.`;
    if (s.kind === "probs") words += " Softmax of the logits: the next token's probabilities at each position.";
    this.tip.textContent = words;
  },

  // What a stage reads, in words: "x_t (embed) and h_t (hidden) at position t − 1".
  readsInWords(s, i) {
    const byId = Object.fromEntries(this.data.stages.map((stage) => [stage.id, stage]));
    return "reads " + s.reads.map((read) => {
      const from = byId[read.stage];
      const name = from.col ? `${from.col[1]} (${from.col[0]})` : from.title;
      if (read.offset === 0) return `${name} at this position`;
      const where = i === undefined ? `t − ${-read.offset}` : i + read.offset;
      const pad = i !== undefined && i + read.offset < 0 ? ", before the text: the padding" : "";
      const before = i === undefined ? `position ${where}` : `position ${where}${pad}`;
      return `${name} at ${before}`;
    }).join(", ");
  },

  tipNode(s, i) {
    const d = this.data;
    const v = s.main;
    const first = v.first[i].map((x) => fmt(x, 3)).join(", ");
    let words = `“${d.tokens[i]}” after ${s.title}: ‖x‖ = ${fmt(v.norm[i], 3)}, first of ${v.size} entries ` +
      `[${first}, …]`;
    if (s.add) {
      words += `; ${s.kind === "attn" ? "attention" : "the MLP"} added a vector of norm ${fmt(s.add.norm[i], 3)} ` +
        `to the normed input's ${fmt(s.normed.norm[i], 3)}`;
    }
    if (s.tok && s.pos) words += `; token ${fmt(s.tok.norm[i], 3)} + position ${fmt(s.pos.norm[i], 3)}`;
    if (s.reads) words += `; ${s.formula}, ${this.readsInWords(s, i)}`;
    this.tip.textContent = words + ".";
  },

  // The arrow keys (and Home, End) move the focus between tokens, which lights each; Enter or Space keeps it lit.
  tokenKey(e, i) {
    const T = this.data.tokens.length;
    const next = { ArrowDown: i + 1, ArrowRight: i + 1, ArrowUp: i - 1, ArrowLeft: i - 1, Home: 0, End: T - 1 }[e.key];
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      this.pin(i);
    } else if (next !== undefined) {
      e.preventDefault();
      this.moveFocus(".lvf-token", "data-token", Math.max(0, Math.min(T - 1, next)));
    }
  },

  // A token tapped, clicked or chosen with Enter stays lit (as a hover lights it) until chosen again.
  pin(i) {
    this.pinned = this.pinned === i ? null : i;
    for (const node of this.svg.querySelectorAll(".lvf-token")) {
      node.setAttribute("aria-pressed", String(Number(node.dataset.token) === this.pinned));
    }
    this.light(this.pinned === null ? i : this.pinned);
  },

  // The one element of a group (tokens, columns) the Tab key stops on: the one focused last.
  moveFocus(selector, attribute, index) {
    for (const node of this.svg.querySelectorAll(selector)) {
      node.setAttribute("tabindex", node.getAttribute(attribute) === String(index) ? "0" : "-1");
    }
    this.svg.querySelector(`${selector}[${attribute}="${index}"]`).focus();
  },

  columnKey(e, k) {
    const n = this.data.stages.length;
    const next = { ArrowRight: k + 1, ArrowDown: k + 1, ArrowLeft: k - 1, ArrowUp: k - 1, Home: 0, End: n - 1 }[e.key];
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      this.pick(k);
    } else if (next !== undefined) {
      e.preventDefault();
      this.moveFocus(".lvf-col", "data-stage", Math.max(0, Math.min(n - 1, next)));
    }
  },

  // Stop on stage k; a block's column opens it into its heads and MLP (and tells Python which block is open).
  pick(k) {
    this.pause();
    this.stage = k;
    this.showStage();
    const s = this.data.stages[k];
    if (s.kind === "attn" || s.kind === "mlp") {
      this.open = this.open === s.layer ? null : s.layer;
      this.drawDetail();
      this.setStateValue("block", this.open);
    }
  },
};
