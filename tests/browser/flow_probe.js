// What the flow's browser tests and benchmarks/flow.py watch, injected by them alone (page.add_init_script) before
// the page loads: students' pages never load it, and the flow's own modules keep no record for it. It watches the
// flow from outside, as the DOM and the browser's User Timing show it:
//
//   visited        every stage that Play, Step or a click showed, in order (the root's data-stage, set non-empty)
//   frames         the page's frame times (ms) while the pulse moves between stages (.lvf-pulse on the page)
//   firstFrameMs   from the data's arrival (the flow's performance mark "lvf:data") to the first animation frame
//                  after the picture is drawn (the root's data-ready set)

window.lvfProbe = { visited: [], frames: [], firstFrameMs: undefined };

(() => {
  const probe = window.lvfProbe;
  let previous = null;
  const frame = (now) => {
    const moving = document.querySelector(".lvf .lvf-pulse") !== null;
    if (moving && previous !== null) probe.frames.push(now - previous);
    previous = moving ? now : null;
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  const watch = new MutationObserver((records) => {
    for (const record of records) {
      const root = record.target;
      if (!root.classList || !root.classList.contains("lvf")) continue;
      if (record.attributeName === "data-stage" && root.dataset.stage !== "") {
        probe.visited.push(Number(root.dataset.stage));
      }
      if (record.attributeName === "data-ready") {
        const marks = performance.getEntriesByName("lvf:data");
        const start = marks.length ? marks[marks.length - 1].startTime : null;
        requestAnimationFrame((now) => {
          if (start !== null) probe.firstFrameMs = now - start;
        });
      }
    }
  });
  const start = () => watch.observe(document.documentElement, {
    subtree: true, attributes: true, attributeFilter: ["data-stage", "data-ready"],
  });
  if (document.documentElement) start();
  else document.addEventListener("DOMContentLoaded", start);
})();
