// The sampling transforms of the flow's output bars (the one computation the browser does: the last position's
// logits are in the payload, sorted from the largest), imported by side.js.

const GREEDY_BELOW = 1e-3; // llmviz.generation.sampling.GREEDY_BELOW: a lower temperature is greedy

// Temperature, then top-k, then top-p, as llmviz.generation.sampling applies them, on logits sorted from the
// largest. Returns the probabilities in the same order (0 for a token cut) and how many tokens are kept.
export function sampled(sortedLogits, temperature, topK, topP) {
  const n = sortedLogits.length;
  let kept = n;
  if (topK > 0 && topK < n) {
    const kth = sortedLogits[topK - 1];
    kept = topK;
    while (kept < n && sortedLogits[kept] >= kth) kept += 1; // tokens tied with the k-th stay
  }
  const probs = new Float64Array(n);
  if (temperature < GREEDY_BELOW) {
    probs[0] = 1;
    return { probs, kept: 1 };
  }
  const top = sortedLogits[0] / temperature;
  let sum = 0;
  for (let i = 0; i < kept; i += 1) {
    probs[i] = Math.exp(sortedLogits[i] / temperature - top);
    sum += probs[i];
  }
  for (let i = 0; i < kept; i += 1) probs[i] /= sum;
  if (topP < 1) {
    let before = 0;
    let last = kept;
    for (let i = 0; i < kept; i += 1) {
      if (i > 0 && before >= topP) {
        last = i;
        break;
      }
      before += probs[i];
    }
    let mass = 0;
    for (let i = 0; i < last; i += 1) mass += probs[i];
    for (let i = 0; i < n; i += 1) probs[i] = i < last ? probs[i] / mass : 0;
    kept = last;
  }
  return { probs, kept };
}
