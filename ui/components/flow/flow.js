// The flow: one forward pass of the picked model, drawn from llmviz/lessons/flow.py's payload (every number is the
// model's own, from run_with_cache). Plain hand-written JavaScript modules, no library, nothing fetched from
// elsewhere: main.js is the Streamlit Custom Components v2 module that ui/panels/flow.py mounts, and it makes one
// Flow per picture. The Flow holds the state (the payload, the stage shown, the token lit, the block opened) and
// lays out the page's parts; each part's methods live in their own file:
//
//   picture.js      the SVG: a column per stage, a row per token, attention lines (links.js: the lines that carry a
//                   recurrent state on, or a WaveNet's dilated inputs, from earlier positions)
//   side.js         the next-token bars and the sampling sliders (sampling.js: temperature, top-k, top-p)
//   detail.js       a block opened into its heads' patterns and its MLP or experts
//   interaction.js  hover, focus, the keyboard and the tooltips
//   playback.js     Play, Step, Back and the pulse that moves between stages
//
// What the browser computes itself is only the sampling transforms of the last position's logits, which the payload
// holds in full and sorted.

import { el, text } from "./dom.js";
import { detail } from "./detail.js";
import { interaction } from "./interaction.js";
import { links } from "./links.js";
import { picture } from "./picture.js";
import { playback } from "./playback.js";
import { side } from "./side.js";

export class Flow {
  constructor(root, setStateValue) {
    this.root = root;
    this.setStateValue = setStateValue;
    this.stage = null; // the stage shown last by Play/Step (null: everything drawn)
    this.hot = null; // the token lit by hover or focus
    this.pinned = null; // the token kept lit (tapped, clicked, or Enter): what the picture goes back to
    this.open = null; // the block opened into its heads
    this.speed = 1;
    this.playing = false;
    this.raf = null;
    this.sig = null;
  }

  // New data from Python: draw it (the same data again, as on every rerun of the page, changes nothing).
  update(data) {
    if (data && data.sig === this.sig) {
      return;
    }
    performance.mark("lvf:data"); // the data is here (the server's forward pass is done): the benchmark's start
    this.sig = data ? data.sig : null;
    this.data = data ? data.payload : null;
    this.open = data && data.open !== undefined && data.open !== null ? data.open : null;
    this.compact = Boolean(data && data.compact);
    this.big = Boolean(data && data.big);
    this.stage = null;
    this.hot = null;
    this.pinned = null;
    this.draw();
  }

  draw() {
    const root = this.root;
    root.replaceChildren();
    root.classList.toggle("lvf-big", this.big);
    const d = this.data;
    if (!d) return;
    this.controls = el("div", { class: "lvf-controls" }, root);
    this.drawControls();
    const body = el("div", { class: "lvf-body" }, root);
    this.svgBox = el("div", { class: "lvf-svgbox" }, body);
    this.side = el("div", { class: "lvf-side" }, body);
    this.tip = el("div", { class: "lvf-tip", role: "status" }, root);
    const attends = (d.stages || []).some((stage) => stage.kind === "attn"); // a bigram, an MLP, an RNN: none
    const carries = (d.stages || []).some((stage) => stage.reads);
    this.tip.textContent = "Hover or focus a token to light its path through " +
      (attends ? "every block and the tokens its attention reads" : carries ? "the model and the lines from " +
        "the earlier positions it reads" : "the model") + " (tap or Enter keeps it lit; arrow keys move); hover a " +
      "dot for its vector.";
    this.detail = el("div", { class: "lvf-detail" }, root);
    this.drawSvg();
    this.drawSide();
    this.drawDetail();
    this.showStage();
    root.dataset.ready = "1";
  }

  drawControls() {
    const c = this.controls;
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
    const range = { type: "range", min: "0.25", max: "4", step: "0.25", value: String(this.speed) };
    const speed = el("input", range, speedLabel);
    speed.setAttribute("aria-label", "Animation speed");
    const speedValue = text("span", `${this.speed}×`, {}, speedLabel);
    speed.oninput = () => {
      this.speed = Number(speed.value);
      speedValue.textContent = `${this.speed}×`;
    };
    this.stageLabel = text("span", "", { class: "lvf-stage", "aria-live": "polite" }, c);
    const m = this.data.model;
    const at = m.step !== null && m.step !== undefined ? ` · step ${m.step}` : "";
    text("span", modelFacts(m) + at, { class: "lvf-facts" }, c);
  }
}

// One line on the model: a GPT's sizes and switches, or the class of a smaller model.
function modelFacts(m) {
  if (m.kind !== "gpt") return m.name;
  const kv = m.kv_heads !== m.heads ? ` (${m.kv_heads} K/V)` : "";
  const positions = m.positions === "rope" ? "RoPE" : m.positions;
  const norm = m.norm === "rmsnorm" ? "RMSNorm" : "LayerNorm";
  const experts = m.experts ? `${m.experts} experts (top ${m.top_k})` : m.mlp === "swiglu" ? "SwiGLU" : "GELU MLP";
  return `${m.layers} blocks · ${m.heads} heads${kv} · d ${m.d_model} · ${positions} positions · ${norm}` +
    (m.mlp ? ` · ${experts}` : "");
}

Object.assign(Flow.prototype, picture, links, side, detail, interaction, playback);
