// Play, Step and Back (Flow's methods): the stages shown one after another, those still to come faded, and a
// pulse (a dot a token) that moves from one stage's column to the next.

import { el } from "./dom.js";

export const playback = {
  // Show stage `this.stage` (null: all of them). Its number is on the root (data-stage) for anyone watching.
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
    if (s) this.tipStage(s);
  },

  stepBy(delta) {
    this.pause();
    this.advance(delta);
  },

  advance(delta) {
    const n = this.data.stages.length;
    const from = this.stage === null ? (delta > 0 ? -1 : n) : this.stage;
    const to = Math.max(0, Math.min(n - 1, from + delta));
    this.stage = to;
    this.showStage();
    if (delta > 0 && to > 0) this.animatePulse(to - 1, to);
    return to;
  },

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
  },

  pause() {
    this.playing = false;
    clearTimeout(this.timer);
    if (this.playButton) this.playButton.textContent = "▶ Play";
  },

  // Each token's vector travels from one stage to the next: one dot a token, moving for 800 ms / speed.
  animatePulse(from, to) {
    const L = this.L;
    const layer = this.pulseLayer;
    layer.replaceChildren();
    const T = this.data.tokens.length;
    const dots = [];
    for (let i = 0; i < T; i += 1) {
      dots.push(el("circle", { r: 4, class: "lvf-pulse", cx: L.xs[from], cy: L.y(i) }, layer, true));
    }
    const duration = 800 / this.speed;
    const start = performance.now();
    cancelAnimationFrame(this.raf);
    const frame = (now) => {
      const t = Math.min(1, (now - start) / duration);
      const x = L.xs[from] + (L.xs[to] - L.xs[from]) * t;
      for (const dot of dots) dot.setAttribute("cx", x.toFixed(1));
      if (t < 1) this.raf = requestAnimationFrame(frame);
      else layer.replaceChildren();
    };
    this.raf = requestAnimationFrame(frame);
  },

  stop() {
    this.pause();
    cancelAnimationFrame(this.raf);
  },
};
