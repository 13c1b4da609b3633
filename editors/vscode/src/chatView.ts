/**
 * The chat view: a webview in the lspilot side bar container showing the transcript (streamed
 * text, tool calls with their status, links that open pending reviews), an input box, and
 * buttons for cancel and the session picker. All state lives in Chat; this only renders it.
 */
import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { Chat } from "./chat";
import { coalesce } from "./core/chat";
import type { ReviewQueue } from "./core/review";

type FromView =
  | { type: "ask"; prompt: string }
  | { type: "cancel" }
  | { type: "sessions" }
  | { type: "newSession" }
  | { type: "openReview"; proposalId: string };

export class ChatView implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly id = "lspilot.chat";
  private view: vscode.WebviewView | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly chat: Chat,
    private readonly queue: ReviewQueue,
  ) {
    this.subscriptions.push(chat.onDidChange(() => this.render()));
    queue.onDidChangeCurrent(() => this.render());
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    view.webview.options = { enableScripts: true };
    view.webview.html = page(randomBytes(16).toString("hex"), view.webview.cspSource);
    view.webview.onDidReceiveMessage((message: FromView) => this.receive(message), undefined, this.subscriptions);
    view.onDidChangeVisibility(() => this.render(), undefined, this.subscriptions);
    this.render();
  }

  private receive(message: FromView): void {
    switch (message.type) {
      case "ask": // a prompt no turn took goes back into the box (it was cleared on sending)
        void this.chat.ask({ prompt: message.prompt }).then((ran) => {
          if (!ran) void this.view?.webview.postMessage({ type: "restore", prompt: message.prompt });
        });
        break;
      case "cancel":
        void vscode.commands.executeCommand("lspilot.cancel");
        break;
      case "sessions":
        void this.chat.pickSession();
        break;
      case "newSession":
        this.chat.newSession();
        break;
      case "openReview":
        void vscode.commands.executeCommand("lspilot.openReview", message.proposalId);
        break;
    }
  }

  /** At most one redraw per frame or so, however fast the model streams. */
  private readonly render = coalesce(() => this.draw(), 50);

  private draw(): void {
    if (!this.view?.visible) return;
    const { entries, running, sessionId } = this.chat.transcript;
    const pending = this.queue.proposals.map((p) => p.id);
    void this.view.webview.postMessage({ type: "render", entries, running, sessionId, pending });
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
  }
}

function page(nonce: string, cspSource: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource} 'unsafe-inline'; script-src 'nonce-${nonce}';">
<style>
  body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); padding: 0 8px; }
  #log { padding-bottom: 6em; }
  .user { margin-top: 1em; padding: 4px 6px; background: var(--vscode-textBlockQuote-background); border-left: 3px solid var(--vscode-focusBorder); white-space: pre-wrap; }
  .text { white-space: pre-wrap; margin: 6px 0; }
  .reasoning { white-space: pre-wrap; opacity: .7; font-style: italic; }
  .tool { font-family: var(--vscode-editor-font-family); font-size: .9em; margin: 2px 0; }
  .tool.error { color: var(--vscode-errorForeground); }
  .detail { font-family: var(--vscode-editor-font-family); font-size: .85em; margin: 0 0 6px 1.2em; white-space: pre-wrap; overflow-wrap: anywhere; }
  .detail.error { color: var(--vscode-errorForeground); }
  .add { color: var(--vscode-gitDecoration-addedResourceForeground); }
  .del { color: var(--vscode-gitDecoration-deletedResourceForeground); }
  .status, .end { opacity: .7; font-size: .9em; }
  a { color: var(--vscode-textLink-foreground); cursor: pointer; }
  #bar { position: fixed; bottom: 0; left: 0; right: 0; padding: 6px 8px; background: var(--vscode-sideBar-background); }
  textarea { width: 100%; box-sizing: border-box; resize: vertical; color: var(--vscode-input-foreground); background: var(--vscode-input-background); border: 1px solid var(--vscode-input-border, transparent); }
  button { color: var(--vscode-button-foreground); background: var(--vscode-button-background); border: none; padding: 3px 8px; margin: 3px 3px 0 0; cursor: pointer; }
</style></head>
<body>
<div id="log"></div>
<div id="bar">
  <textarea id="prompt" rows="3" placeholder="Ask lspilot (Ctrl+Enter to send)"></textarea>
  <button id="send">Send</button><button id="cancel">Cancel</button><button id="sessions">Sessions…</button><button id="new">New</button>
</div>
<script nonce="${nonce}">
  const vscode = acquireVsCodeApi();
  const log = document.getElementById("log");
  const prompt = document.getElementById("prompt");
  const ICON = { pending: "○", running: "◐", completed: "●", error: "✗" };
  function send() {
    const text = prompt.value.trim();
    if (!text) return;
    vscode.postMessage({ type: "ask", prompt: text });
    prompt.value = "";
  }
  document.getElementById("send").onclick = send;
  document.getElementById("cancel").onclick = () => vscode.postMessage({ type: "cancel" });
  document.getElementById("sessions").onclick = () => vscode.postMessage({ type: "sessions" });
  document.getElementById("new").onclick = () => vscode.postMessage({ type: "newSession" });
  prompt.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) send(); });
  function div(cls, text) { const d = document.createElement("div"); d.className = cls; d.textContent = text; return d; }
  // Why a tool call failed, or the diff of its change (its added and removed lines coloured).
  function detail(e) {
    const pre = document.createElement("pre");
    pre.className = "detail " + e.status;
    for (const line of e.detail.split("\\n")) {
      const span = document.createElement("span");
      const diffed = e.status !== "error" && !line.startsWith("+++ ") && !line.startsWith("--- ");
      span.className = diffed && line[0] === "+" ? "add" : diffed && line[0] === "-" ? "del" : "";
      span.textContent = line + "\\n";
      pre.append(span);
    }
    return pre;
  }
  window.addEventListener("message", ({ data }) => {
    if (data.type === "restore" && !prompt.value) prompt.value = data.prompt;
    if (data.type !== "render") return;
    const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 20;
    log.replaceChildren();
    for (const e of data.entries) {
      if (e.type === "user") log.append(div("user", e.text));
      else if (e.type === "text") log.append(div("text", e.text));
      else if (e.type === "reasoning") log.append(div("reasoning", e.text));
      else if (e.type === "tool") {
        log.append(div("tool " + e.status, (ICON[e.status] || "") + " " + e.title));
        if (e.detail) log.append(detail(e));
      }
      else if (e.type === "status") log.append(div("status", e.text));
      else if (e.type === "plan") log.append(div("status", e.todos.map((t) => (t.status === "completed" ? "☑ " : "☐ ") + t.content).join("\\n")));
      else if (e.type === "end") log.append(div("end", "— " + e.stopReason + (e.error ? ": " + e.error : "")));
      else if (e.type === "review") {
        const name = e.label || (e.uri ? decodeURIComponent(e.uri.split("/").pop()) : "a change");
        if (data.pending.includes(e.proposalId)) {
          const d = div("tool", "");
          const a = document.createElement("a");
          a.textContent = "Review " + name;
          a.onclick = () => vscode.postMessage({ type: "openReview", proposalId: e.proposalId });
          d.append("⧉ ", a);
          log.append(d);
        } else log.append(div("status", "reviewed " + name));
      }
    }
    if (data.running) log.append(div("status", "working…"));
    if (atBottom) window.scrollTo(0, document.body.scrollHeight);
  });
</script></body></html>`;
}
