// ESLint's configuration for llmviz's browser JavaScript: the flow's ES modules (ui/components/) and the script the
// browser tests inject (tests/browser/flow_probe.js). .ci/run runs it (npm ci, then npx eslint) with the versions
// package-lock.json pins; the app and README's commands need no Node. Line length and file length are
// tests/project/test_code_health.py's (120 columns, 600 lines), as for the Python.
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    files: ["ui/components/**/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.browser },
    rules: {
      eqeqeq: "error",
      "no-var": "error",
      "prefer-const": "error",
      "no-unused-vars": ["error", { args: "after-used", argsIgnorePattern: "^_" }],
      complexity: ["error", 15],
    },
  },
  {
    files: ["tests/browser/flow_probe.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "script", globals: globals.browser },
    rules: { eqeqeq: "error", "no-var": "error", "prefer-const": "error" },
  },
];
