// The VS Code client of `lpkc lsp`: starts the server over stdio for .lpk
// files. Everything else (diagnostics, hover, navigation, formatting,
// quick fixes, semantic tokens) comes from the server.
"use strict";

const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration("lpk");
  const command = config.get("server.path", "lpkc");
  const budget = String(config.get("server.lintBudgetMs", 10000));
  const run = { command, args: ["lsp", "--lint-budget", budget] };
  client = new LanguageClient(
    "lpk",
    "lpkc lsp",
    { run, debug: run },
    { documentSelector: [{ scheme: "file", language: "lpk" }, { scheme: "untitled", language: "lpk" }] }
  );
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
