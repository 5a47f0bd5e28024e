// The flow: one forward pass of the picked model, drawn from llmviz/lessons/flow.py's payload (every number is the
// model's own, from run_with_cache). Plain hand-written JavaScript, no library, nothing fetched: a Streamlit Custom
// Components v2 module (ui/panels/flow.py mounts it). What it computes itself is only the sampling transforms
// (temperature, top-k, top-p) of the last position's logits, which the payload holds in full and sorted.
//
// Student text (the tokens) is only ever set with textContent, never as HTML. ui/panels/flow.py joins sampling.js
// (the sampling transforms) and this file into one module.

const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, parent, svg) {
  const node = svg ? document.createElementNS(SVG, tag) : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  if (parent) parent.appendChild(node);
  return node;
}

function text(tag, value, attrs, parent, svg) {
  const node = el(tag, attrs, parent, svg);
  node.textContent = value;
  return node;
}

function fmt(x, digits) {
  return Number(x).toFixed(digits === undefined ? 3 : digits);
}

function heat(t) {
  // 0 → pale, 1 → deep blue
  const v = Math.max(0, Math.min(1, t));
  const r = Math.round(235 - 200 * v);
  const g = Math.round(242 - 150 * v);
  const b = Math.round(250 - 60 * v);
  return `rgb(${r},${g},${b})`;
}

class Flow {
  constructor(root, setStateValue) {
    this.root = root;
    this.setStateValue = setStateValue;
    this.stage = null; // the stage shown last by Play/Step (null: everything drawn)
    this.hot = null; // the token lit by hover or focus
    this.open = null; // the block opened into its heads
    this.speed = 1;
    this.playing = false;
    this.frames = []; // the last frame times (ms), for the benchmark
    this.raf = null;
    this.pulse = null;
    this.sig = null;
    this.visited = []; // every stage Play/Step showed, in order (the browser tests read it)
  }

  update(data) {
    if (data && data.sig === this.sig) {
      return;
    }
    this.sig = data ? data.sig : null;
    this.data = data ? data.payload : null;
    this.open = data && data.open !== undefined && data.open !== null ? data.open : null;
    this.compact = Boolean(data && data.compact);
    this.stage = null;
    this.hot = null;
    this.visited = [];
    const started = performance.now(); // the data is here: the server's forward pass is done
    this.draw();
    requestAnimationFrame(() => {
      this.firstFrameMs = performance.now() - started; // the benchmark reads it (benchmarks/flow.py)
    });
  }

  // ------------------------------------------------------------------ drawing
  draw() {
    const root = this.root;
    root.replaceChildren();
    const d = this.data;
    if (!d) return;
    this.controls = el("div", { class: "lvf-controls" }, root);
    this.drawControls();
    const body = el("div", { class: "lvf-body" }, root);
    this.svgBox = el("div", { class: "lvf-svgbox" }, body);
    this.side = el("div", { class: "lvf-side" }, body);
    this.tip = el("div", { class: "lvf-tip", role: "status" }, root);
    const attends = (d.stages || []).some((stage) => stage.kind === "attn");  // a bigram, an MLP, an RNN: no attention
    this.tip.textContent = "Hover or focus a token to light its path through " +
      (attends ? "every block and the tokens its attention reads" : "the model") + "; hover a dot for its vector.";
    this.detail = el("div", { class: "lvf-detail" }, root);
    this.drawSvg();
    this.drawSide();
    this.drawDetail();
    this.showStage();
    root.dataset.ready = "1";
    root.dataset.drawnAt = String(performance.now());
  }

  drawControls() {
    const c = this.controls;
    const d = this.data;
    this.playButton = text("button", "▶ Play", { class: "lvf-btn", "data-act": "play" }, c);
    this.playButton.onclick = () => (this.playing ? this.pause() : this.play());
    const back = text("button", "◀ Back", { class: "lvf-btn", "data-act": "back" }, c);
    back.onclick = () => this.stepBy(-1);
    const step = text("button", "Step ▶", { class: "lvf-btn", "data-act": "step" }, c);
    step.onclick = () => this.stepBy(1);
    const all = text("button", "Show all", { class: "lvf-btn", "data-act": "all" }, c);
    all.onclick = () => {
      this.pause();
      this.stage = null;
      this.showStage();
    };
    const speedLabel = el("label", { class: "lvf-speed" }, c);
    speedLabel.append("Speed ");
    const speed = el("input", { type: "range", min: "0.25", max: "4", step: "0.25", value: String(this.speed) }, speedLabel);
    speed.setAttribute("aria-label", "Animation speed");
    const speedValue = text("span", `${this.speed}×`, {}, speedLabel);
    speed.oninput = () => {
      this.speed = Number(speed.value);
      speedValue.textContent = `${this.speed}×`;
    };
    this.stageLabel = text("span", "", { class: "lvf-stage", "aria-live": "polite" }, c);
    const m = d.model;
    const facts = m.kind === "gpt"
      ? `${m.layers} blocks · ${m.heads} heads${m.kv_heads !== m.heads ? ` (${m.kv_heads} K/V)` : ""} · d ${m.d_model}`
        + ` · ${m.positions === "rope" ? "RoPE" : m.positions} positions · ${m.norm === "rmsnorm" ? "RMSNorm" : "LayerNorm"}`
        + (m.mlp ? ` · ${m.experts ? `${m.experts} experts (top ${m.top_k})` : m.mlp === "swiglu" ? "SwiGLU" : "GELU MLP"}` : "")
      : m.name;
    text("span", facts + (m.step !== null && m.step !== undefined ? ` · step ${m.step}` : ""), { class: "lvf-facts" }, c);
  }

  layout() {
    const d = this.data;
    const width = Math.max(480, this.root.clientWidth - 272);
    const tokens = d.tokens.length;
    const rowH = tokens > 24 ? 16 : tokens > 12 ? 20 : 26;
    const top = 44;
    const labelW = 92;
    const stages = d.stages;
    const wide = { tokens: 0, probs: 110 };
    const fixed = labelW + wide.probs + 10;
    const n = stages.length - 2; // tokens and probs columns are drawn apart
    const colW = Math.max(28, (width - fixed) / Math.max(1, n));
    const xs = [];
    let x = labelW;
    for (const s of stages) {
      if (s.kind === "tokens") {
        xs.push(labelW - 6);
        continue;
      }
      x += s.kind === "probs" ? colW / 2 + 10 : colW;
      xs.push(x);
    }
    return { width, rowH, top, labelW, colW, xs, height: top + tokens * rowH + 14, y: (i) => top + i * rowH + rowH / 2 };
  }

  drawSvg() {
    const d = this.data;
    const L = this.layout();
    this.L = L;
    const svg = el("svg", { width: L.width, height: L.height, class: "lvf-svg", role: "group" }, this.svgBox, true);
    svg.setAttribute("aria-label", `The forward pass of ${d.tokens.length} tokens through ${d.stages.length} stages`);
    this.svg = svg;
    const T = d.tokens.length;
    this.byToken = Array.from({ length: T }, () => []);
    this.byStage = d.stages.map(() => []);
    this.attnLines = [];
    const gHead = el("g", { class: "lvf-heads" }, svg, true); // first: the columns lie under the lines and dots
    const gLines = el("g", { class: "lvf-lines" }, svg, true);
    const gStream = el("g", { class: "lvf-stream" }, svg, true);
    const gNodes = el("g", { class: "lvf-nodes" }, svg, true);
    // the residual stream: one line a token from the first vector to the probabilities
    for (let i = 0; i < T; i += 1) {
      const line = el("line", { x1: L.xs[1] ?? L.labelW, x2: L.xs[L.xs.length - 1], y1: L.y(i), y2: L.y(i), class: "lvf-res" }, gStream, true);
      this.byToken[i].push(line);
    }
    d.stages.forEach((s, k) => {
      this.drawHeader(gHead, s, k);
      if (s.kind === "tokens") this.drawTokens(gNodes, k);
      else if (s.kind === "attn") this.drawAttention(gLines, gNodes, s, k);
      else if (s.kind === "logits" || s.kind === "probs") this.drawOutputs(gNodes, s, k);
      else this.drawVectors(gNodes, s, k);
    });
    this.pulseLayer = el("g", { class: "lvf-pulses" }, svg, true);
  }

  drawHeader(g, s, k) {
    const L = this.L;
    const x = L.xs[k];
    const clickable = s.kind === "attn" || s.kind === "mlp";
    const head = el("g", { class: `lvf-col lvf-col-${s.kind}`, tabindex: "0", role: "button", "data-stage": String(k) }, g, true);
    head.setAttribute("aria-label", `${s.title}, ${s.shape}` + (clickable ? ": press Enter to open its heads and MLP" : ""));
    const [line1, line2] = this.columnTitle(s);
    el("rect", { x: x - L.colW / 2 + 2, y: 2, width: L.colW - 4, height: L.height - 4, rx: 6, class: "lvf-colbg" }, head, true);
    text("text", line1, { x, y: 15, class: "lvf-coltitle", "text-anchor": "middle" }, head, true);
    text("text", line2, { x, y: 29, class: "lvf-colsub", "text-anchor": "middle" }, head, true);
    head.addEventListener("click", () => this.pick(k));
    head.addEventListener("keydown", (e) => this.columnKey(e, k));
    head.addEventListener("mouseenter", () => this.tipStage(s, head));
    head.addEventListener("focus", () => this.tipStage(s, head));
    this.byStage[k].push(head);
  }

  columnTitle(s) {
    const m = this.data.model;
    if (s.kind === "attn") return [`B${s.layer}`, "attn"];
    if (s.kind === "mlp") return [`B${s.layer}`, m.experts ? "experts" : "MLP"];
    if (s.kind === "embed") return ["embed", m.positions === "rope" ? "+RoPE" : m.positions === "none" ? "" : "+pos"];
    if (s.kind === "final") return ["final", "norm"];
    if (s.kind === "logits") return ["logits", ""];
    if (s.kind === "probs") return ["next", "token"];
    if (s.kind === "tokens") return ["", ""];
    return [s.title.split(".")[0], s.title.split(".").slice(1).join(".")];
  }

  drawTokens(g, k) {
    const d = this.data;
    const L = this.L;
    d.tokens.forEach((tok, i) => {
      const label = text("text", tok, { x: L.labelW - 8, y: L.y(i) + 4, "text-anchor": "end", class: "lvf-token", tabindex: "0", "data-token": String(i) }, g, true);
      label.setAttribute("role", "button");
      label.setAttribute("aria-label", `token ${i}: ${tok} (id ${d.ids[i]})`);
      label.addEventListener("mouseenter", () => this.light(i));
      label.addEventListener("focus", () => this.light(i));
      label.addEventListener("keydown", (e) => this.tokenKey(e, i));
      this.byToken[i].push(label);
      this.byStage[k].push(label);
    });
    this.svg.addEventListener("mouseleave", () => this.light(null));
  }

  node(g, s, k, i, x, norms, max) {
    const c = el("circle", { cx: x, cy: this.L.y(i), r: Math.min(7, this.L.rowH / 2 - 2), class: "lvf-node", fill: heat(norms[i] / max), "data-stage": String(k), "data-token": String(i) }, g, true);
    c.addEventListener("mouseenter", () => {
      this.light(i);
      this.tipNode(s, i, c);
    });
    c.addEventListener("click", () => this.pick(k)); // a dot's click is its column's
    this.byToken[i].push(c);
    this.byStage[k].push(c);
    return c;
  }

  drawVectors(g, s, k) {
    const norms = s.main.norm;
    const max = Math.max(...norms) || 1;
    norms.forEach((_, i) => this.node(g, s, k, i, this.L.xs[k], norms, max));
  }

  drawAttention(gLines, gNodes, s, k) {
    const L = this.L;
    const block = this.data.blocks[s.layer];
    const H = block.patterns.length;
    const x0 = L.xs[k - 1];
    const x1 = L.xs[k];
    const T = this.data.tokens.length;
    for (let i = 0; i < T; i += 1) {
      for (let j = 0; j <= i; j += 1) {
        let w = 0;
        for (let h = 0; h < H; h += 1) w += block.patterns[h][i][j];
        w /= H;
        if (w < 0.02) continue;
        const path = el("path", { d: `M${x0 + 8},${L.y(j)} C${(x0 + x1) / 2},${L.y(j)} ${(x0 + x1) / 2},${L.y(i)} ${x1 - 8},${L.y(i)}`, class: "lvf-attn", "stroke-width": (0.6 + 3 * w).toFixed(2), "stroke-opacity": (0.15 + 0.6 * w).toFixed(3), "data-stage": String(k), "data-query": String(i), "data-key": String(j) }, gLines, true);
        path.dataset.w = String(w);
        this.byToken[i].push(path);
        this.byStage[k].push(path);
        this.attnLines.push(path);
      }
    }
    this.drawVectors(gNodes, s, k);
  }

  drawOutputs(g, s, k) {
    const d = this.data;
    const L = this.L;
    d.tokens.forEach((_, i) => {
      if (s.kind === "logits") {
        const top = d.next.logits[i][0];
        const c = el("rect", { x: L.xs[k] - 7, y: L.y(i) - 6, width: 14, height: 12, rx: 2, class: "lvf-node lvf-logit", "data-stage": String(k), "data-token": String(i) }, g, true);
        c.addEventListener("mouseenter", () => {
          this.light(i);
          this.tip.textContent = `Logits at position ${i}: a score for each of the ${d.model.vocab.toLocaleString()} tokens; the highest is ${fmt(top, 2)} (${d.next.tokens[i][0]}).`;
        });
        this.byToken[i].push(c);
        this.byStage[k].push(c);
      } else {
        const label = text("text", `${d.next.tokens[i][0]} ${fmt(100 * d.next.probs[i][0], 0)}%`, { x: L.xs[k] - 10, y: L.y(i) + 4, class: "lvf-pred", "data-stage": String(k), "data-token": String(i) }, g, true);
        label.addEventListener("mouseenter", () => this.light(i));
        this.byToken[i].push(label);
        this.byStage[k].push(label);
      }
    });
  }

  // ------------------------------------------------------------------ the output bars and sampling controls
  drawSide() {
    const side = this.side;
    const d = this.data;
    this.barTitle = text("div", "", { class: "lvf-bartitle" }, side);
    this.bars = el("div", { class: "lvf-bars" }, side);
    this.barRows = [];
    const controls = el("div", { class: "lvf-sampling" + (this.compact ? " lvf-hidden" : "") }, side);
    const last = d.last;
    this.temperature = 1;
    this.topK = 0;
    this.topP = 1;
    const slider = (label, min, max, step, value, on, show) => {
      const row = el("label", { class: "lvf-slider" }, controls);
      text("span", label, {}, row);
      const input = el("input", { type: "range", min: String(min), max: String(max), step: String(step), value: String(value), "data-control": label }, row);
      input.setAttribute("aria-label", label);
      const out = text("span", show(value), { class: "lvf-val" }, row);
      input.oninput = () => {
        on(Number(input.value));
        out.textContent = show(Number(input.value));
        this.drawBars();
      };
      return input;
    };
    slider("Temperature", 0.1, 2, 0.05, 1, (v) => (this.temperature = v), (v) => fmt(v, 2));
    slider("Top-k", 0, Math.min(50, last.logits.length), 1, 0, (v) => (this.topK = v), (v) => (v ? String(v) : "off"));
    slider("Top-p", 0.05, 1, 0.05, 1, (v) => (this.topP = v), (v) => (v >= 1 ? "off" : fmt(v, 2)));
    this.sideNote = text("div", "", { class: "lvf-note" }, side);
    this.drawBars();
  }

  distribution() {
    return sampled(this.data.last.logits, this.temperature, this.topK, this.topP);
  }

  drawBars() {
    const d = this.data;
    const T = d.tokens.length;
    const position = this.hot === null ? T - 1 : this.hot;
    const isLast = position === T - 1;
    let rows;
    let note;
    if (isLast) {
      const { probs, kept } = this.distribution();
      this.shown = Array.from(probs.slice(0, d.last.tokens.length));
      rows = d.last.tokens.map((tok, r) => [tok, this.shown[r]]);
      note = `After “${d.tokens[T - 1]}”: softmax(logits / ${fmt(this.temperature, 2)}) over ${kept.toLocaleString()} kept token${kept === 1 ? "" : "s"}`
        + (d.last.omitted ? ` (the ${d.last.omitted.toLocaleString()} lowest logits are not sent: ${fmt(100 * d.last.omitted_share, 2)}% at temperature 1)` : "") + ".";
    } else {
      rows = d.next.tokens[position].map((tok, r) => [tok, d.next.probs[position][r]]);
      note = `After “${d.tokens[position]}” (position ${position}), at temperature 1. Temperature, top-k and top-p reshape the last position's bars.`;
    }
    this.barTitle.textContent = isLast ? "Next token" : `What position ${position} predicts`;
    // the rows are made once and updated in place: a hover each frame changes texts and widths, nothing else
    this.barRows = this.barRows || [];
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
  }

  // ------------------------------------------------------------------ a block opened into its heads and MLP
  drawDetail() {
    const box = this.detail;
    box.replaceChildren();
    const d = this.data;
    if (this.open === null || !d.blocks[this.open]) {
      if (d.model.kind === "gpt" && !this.compact) text("div", "Click a block's column (or focus it and press Enter) to open it into its heads and its MLP.", { class: "lvf-note" }, box);
      return;
    }
    const layer = this.open;
    const block = d.blocks[layer];
    const m = d.model;
    const heads = el("div", { class: "lvf-headgrid", "data-block": String(layer) }, box);
    text("div", `Block ${layer}: ${block.patterns.length} heads, each a ${d.tokens.length} × ${d.tokens.length} pattern (row: the token reading; column: the token read)`
      + (m.kv_heads !== m.heads ? `; ${m.heads / m.kv_heads} heads share each key/value head` : "") + (m.positions === "rope" ? "; queries and keys rotated by RoPE" : ""), { class: "lvf-detailtitle" }, heads);
    const group = m.heads / m.kv_heads;
    block.patterns.forEach((rows, h) => {
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
        if (i >= 0 && i < rows.length && j >= 0 && j <= i) this.tip.textContent = `Block ${layer}, head ${h}: “${d.tokens[i]}” reads “${d.tokens[j]}” with weight ${fmt(rows[i][j], 4)}`;
      });
      text("figcaption", `head ${h}` + (group > 1 ? ` · K/V ${Math.floor(h / group)}` : ""), {}, fig);
    });
    if (block.mlp) this.drawMlp(box, block.mlp, layer);
  }

  drawMlp(box, mlp, layer) {
    const d = this.data;
    const wrap = el("div", { class: "lvf-mlp", "data-block": String(layer) }, box);
    if (mlp.experts) {
      const E = mlp.router[0].length;
      text("div", `Block ${layer}: the router's probability for each of ${E} experts, per token; the ${mlp.experts[0].length} chosen are outlined`, { class: "lvf-detailtitle" }, wrap);
      const grid = el("div", { class: "lvf-experts", style: `grid-template-columns: 90px repeat(${E}, 22px)` }, wrap);
      d.tokens.forEach((tok, i) => {
        text("span", tok, { class: "lvf-bartok" }, grid);
        for (let e = 0; e < E; e += 1) {
          const chosen = mlp.experts[i].indexOf(e);
          const cellTitle = `“${tok}” → expert ${e}: router ${fmt(mlp.router[i][e], 3)}` + (chosen >= 0 ? `, chosen with weight ${fmt(mlp.weights[i][chosen], 3)}` : "");
          el("span", { class: "lvf-expert" + (chosen >= 0 ? " lvf-chosen" : ""), style: `background:${heat(mlp.router[i][e])}`, title: cellTitle }, grid);
        }
      });
      return;
    }
    text("div", `Block ${layer}'s MLP: the share of its ${mlp.width} neurons above zero for each token, and its strongest neurons`, { class: "lvf-detailtitle" }, wrap);
    d.tokens.forEach((tok, i) => {
      const row = el("div", { class: "lvf-bar" }, wrap);
      text("span", tok, { class: "lvf-bartok" }, row);
      const track = el("span", { class: "lvf-track" }, row);
      el("span", { class: "lvf-fill lvf-mlpfill", style: `width:${100 * mlp.active[i]}%` }, track);
      text("span", `${fmt(100 * mlp.active[i], 0)}% · ` + mlp.top[i].map((n, r) => `#${n} ${fmt(mlp.top_values[i][r], 2)}`).join(", "), { class: "lvf-pct lvf-wide" }, row);
    });
  }

  // ------------------------------------------------------------------ hover, focus, tooltips
  light(i) {
    if (i === this.hot) return;
    const t0 = performance.now();
    if (this.hot !== null) for (const node of this.byToken[this.hot]) node.classList.remove("lvf-hot");
    this.hot = i;
    this.svg.classList.toggle("lvf-dim", i !== null);
    if (i !== null) for (const node of this.byToken[i]) node.classList.add("lvf-hot");
    this.root.dataset.hot = i === null ? "" : String(i);
    this.drawBars();
    this.lastHoverMs = performance.now() - t0;
  }

  tipStage(s, anchor) {
    const d = this.data;
    let words = `${s.title}: ${s.shape}.`;
    if (s.kind === "embed") words += d.model.positions === "rope" ? " No position vector is added: RoPE rotates each head's queries and keys by position." : d.model.positions === "none" ? " No positions." : " Each token's row of the embedding table plus its position's row.";
    if (s.kind === "attn") words += ` ${s.norm}, then ${d.model.heads} heads read earlier tokens; their output is added to the residual stream.`;
    if (s.kind === "mlp") words += ` ${s.norm}, then ${d.model.experts ? `the router sends each token to ${d.model.top_k} of ${d.model.experts} experts` : d.model.mlp === "swiglu" ? "a SwiGLU MLP" : "a GELU MLP"}; its output is added to the residual stream.`;
    if (s.kind === "probs") words += " Softmax of the logits: the next token's probabilities at each position.";
    this.tip.textContent = words;
  }

  tipNode(s, i, anchor) {
    const d = this.data;
    const v = s.main;
    const first = v.first[i].map((x) => fmt(x, 3)).join(", ");
    let words = `“${d.tokens[i]}” after ${s.title}: ‖x‖ = ${fmt(v.norm[i], 3)}, first of ${v.size} entries [${first}, …]`;
    if (s.add) words += `; ${s.kind === "attn" ? "attention" : "the MLP"} added a vector of norm ${fmt(s.add.norm[i], 3)} to the normed input's ${fmt(s.normed.norm[i], 3)}`;
    if (s.tok && s.pos) words += `; token ${fmt(s.tok.norm[i], 3)} + position ${fmt(s.pos.norm[i], 3)}`;
    this.tip.textContent = words + ".";
  }

  tokenKey(e, i) {
    const T = this.data.tokens.length;
    let next = null;
    if (e.key === "ArrowDown") next = Math.min(T - 1, i + 1);
    if (e.key === "ArrowUp") next = Math.max(0, i - 1);
    if (next !== null) {
      e.preventDefault();
      this.svg.querySelector(`.lvf-token[data-token="${next}"]`).focus();
    }
  }

  columnKey(e, k) {
    const n = this.data.stages.length;
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      this.pick(k);
    } else if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
      e.preventDefault();
      const next = Math.max(0, Math.min(n - 1, k + (e.key === "ArrowRight" ? 1 : -1)));
      this.svg.querySelector(`.lvf-col[data-stage="${next}"]`).focus();
    }
  }

  pick(k) {
    // stop on this stage; a block's column opens it into its heads and MLP (and tells Python which block is open)
    this.pause();
    this.stage = k;
    this.showStage();
    const s = this.data.stages[k];
    if (s.kind === "attn" || s.kind === "mlp") {
      this.open = this.open === s.layer ? null : s.layer;
      this.drawDetail();
      this.setStateValue("block", this.open);
    }
  }

  // ------------------------------------------------------------------ Play / Step
  showStage() {
    const k = this.stage;
    const n = this.data.stages.length;
    this.byStage.forEach((nodes, s) => {
      const future = k !== null && s > k;
      for (const node of nodes) node.classList.toggle("lvf-future", future);
      for (const node of nodes) node.classList.toggle("lvf-now", k !== null && s === k);
    });
    const s = k === null ? null : this.data.stages[k];
    this.stageLabel.textContent = k === null ? `All ${n} stages` : `Stage ${k + 1}/${n}: ${s.title} ${s.shape}`;
    this.root.dataset.stage = k === null ? "" : String(k);
    if (k !== null) this.visited.push(k);
    if (s) this.tipStage(s);
  }

  stepBy(delta) {
    this.pause();
    this.advance(delta);
  }

  advance(delta) {
    const n = this.data.stages.length;
    const from = this.stage === null ? (delta > 0 ? -1 : n) : this.stage;
    const to = Math.max(0, Math.min(n - 1, from + delta));
    this.stage = to;
    this.showStage();
    if (delta > 0 && to > 0) this.animatePulse(to - 1, to);
    return to;
  }

  play() {
    this.playing = true;
    this.playButton.textContent = "❚❚ Pause";
    if (this.stage === null || this.stage >= this.data.stages.length - 1) this.stage = -1;
    if (this.stage === 0) this.showStage();
    const tick = () => {
      if (!this.playing) return;
      if (this.stage >= this.data.stages.length - 1) {
        this.pause();
        return;
      }
      this.advance(1);
      this.timer = setTimeout(tick, 1100 / this.speed);
    };
    this.timer = setTimeout(tick, 300 / this.speed);
  }

  pause() {
    this.playing = false;
    clearTimeout(this.timer);
    if (this.playButton) this.playButton.textContent = "▶ Play";
  }

  animatePulse(from, to) {
    // each token's vector travels from one stage to the next: one dot a token, moving for 800 ms / speed
    const L = this.L;
    const layer = this.pulseLayer;
    layer.replaceChildren();
    const T = this.data.tokens.length;
    const dots = [];
    for (let i = 0; i < T; i += 1) dots.push(el("circle", { r: 4, class: "lvf-pulse", cx: L.xs[from], cy: L.y(i) }, layer, true));
    const duration = 800 / this.speed;
    const start = performance.now();
    let previous = start;
    cancelAnimationFrame(this.raf);
    const frame = (now) => {
      this.frames.push(now - previous);
      if (this.frames.length > 600) this.frames.shift();
      previous = now;
      const t = Math.min(1, (now - start) / duration);
      const x = L.xs[from] + (L.xs[to] - L.xs[from]) * t;
      for (const dot of dots) dot.setAttribute("cx", x.toFixed(1));
      if (t < 1) this.raf = requestAnimationFrame(frame);
      else layer.replaceChildren();
    };
    this.raf = requestAnimationFrame(frame);
  }

  stop() {
    this.pause();
    cancelAnimationFrame(this.raf);
  }
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  let root = parentElement.querySelector(".lvf");
  if (!root) {
    root = el("div", { class: "lvf" }, parentElement);
  }
  if (!root.lvf) root.lvf = new Flow(root, setStateValue);
  root.lvf.setStateValue = setStateValue;
  root.lvf.update(data);
  return () => root.lvf && root.lvf.stop();
}
