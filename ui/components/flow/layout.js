// Where everything of the picture goes: a column per stage (left to right, in the order the model computes them),
// a row per token. Pure functions of the payload and the width available.

const PROBS_W = 110; // the "next token" column: a predicted token and its probability, written from its x

// The picture's geometry for `data` (the payload) in `width` pixels; `big`: presenter mode's larger type.
// layout({tokens: ["a", "b"], stages: [{kind: "tokens"}, {kind: "hidden"}, {kind: "logits"}, {kind: "probs"}]}, 600)
// puts the columns at xs [86, 212, 332, 402] and the rows at y(0) 57, y(1) 83.
export function layout(data, width, big) {
  const tokens = data.tokens.length;
  const rowH = (tokens > 24 ? 16 : tokens > 12 ? 20 : 26) + (big ? 8 : 0);
  const top = big ? 52 : 44;
  const labelW = big ? 120 : 92;
  const n = data.stages.length - 2; // the tokens and the probabilities are drawn apart
  // the last column's labels start half a column after the logits: every column fits, none wider than 120 px
  const room = (width - labelW - PROBS_W - 10) / (n + 0.5);
  const colW = Math.max(big ? 52 : 28, Math.min(120, room));
  const xs = [];
  let x = labelW;
  for (const s of data.stages) {
    if (s.kind === "tokens") {
      xs.push(labelW - 6);
      continue;
    }
    x += s.kind === "probs" ? Math.max(colW / 2 + 10, big ? 60 : 36) : colW; // "logits" and "next" apart
    xs.push(x);
  }
  return {
    width: Math.ceil(x - 10 + PROBS_W),
    rowH,
    top,
    labelW,
    colW,
    xs,
    height: top + tokens * rowH + 14,
    y: (i) => top + i * rowH + rowH / 2,
  };
}

// A column's two header lines for stage `s` of a model described by `m` (the payload's model facts).
export function columnTitle(s, m) {
  if (s.col) return s.col;
  if (s.kind === "attn") return [`B${s.layer}`, "attn"];
  if (s.kind === "mlp") return [`B${s.layer}`, m.experts ? "experts" : "MLP"];
  if (s.kind === "embed") return ["embed", m.positions === "rope" ? "+RoPE" : m.positions === "none" ? "" : "+pos"];
  if (s.kind === "final") return ["final", "norm"];
  if (s.kind === "logits") return ["logits", ""];
  if (s.kind === "probs") return ["next", "token"];
  if (s.kind === "tokens") return ["", ""];
  return [s.title.split(".")[0], s.title.split(".").slice(1).join(".")];
}
