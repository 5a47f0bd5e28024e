// The Streamlit Custom Components v2 module that ui/panels/flow.py mounts (Streamlit loads it by its address, and
// the browser the files it imports, from this folder): one Flow per picture, kept on its root element across the
// page's reruns, given the new data each time.

import { el } from "./dom.js";
import { Flow } from "./flow.js";

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
