/**
 * Asking and watching: the ask / cancel / sessions commands, the transcript of the session shown,
 * and a status bar item while a turn runs (in any session). The state is core/chat.ts's; the
 * chat view (chatView.ts) renders the transcript.
 */
import * as vscode from "vscode";
import { ChatState, STILL_RUNNING, type Transcript } from "./core/chat";
import type { AskArgs, ReviewEditParams, Update } from "./core/protocol";
import { log, reportError } from "./log";
import type { Server } from "./server";

export class Chat implements vscode.Disposable {
  readonly state = new ChatState();
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 100);
  private server: Server | undefined;

  constructor() {
    this.status.command = "lspilot.cancel";
    this.status.tooltip = "lspilot is working — click to cancel";
  }

  connect(server: Server): void {
    this.server = server;
  }

  get transcript(): Transcript {
    return this.state.transcript;
  }

  onUpdate(update: Update): void {
    this.state.update(update);
    this.showStatus();
    this.changed.fire();
  }

  onReview(params: ReviewEditParams): void {
    this.transcript.noteReview(params);
    this.changed.fire();
  }

  /** The daemon stopped or crashed: its turns are over. */
  onClosed(): void {
    this.state.closed();
    this.showStatus();
    this.changed.fire();
  }

  commands(): vscode.Disposable[] {
    const register = vscode.commands.registerCommand;
    return [
      register("lspilot.ask", (args?: Partial<AskArgs>) => this.askCommand(args)),
      register("lspilot.cancel", () => this.cancel()),
      register("lspilot.sessions", () => this.pickSession()),
      register("lspilot.newSession", () => this.newSession()),
    ];
  }

  /** The ask command: from a code action (arguments given) or an input box (the selection as context). */
  private async askCommand(args?: Partial<AskArgs>): Promise<void> {
    if (args?.prompt) return void (await this.ask({ ...args, prompt: args.prompt }));
    const prompt = await vscode.window.showInputBox({ title: "Ask lspilot", prompt: "What should the agent do?", ignoreFocusOut: true });
    if (prompt) await this.ask({ prompt, ...selectionContext() });
  }

  /** Run a turn; false when none ran to its end (refused, no daemon, failed): the chat keeps the prompt. */
  async ask(args: AskArgs): Promise<boolean> {
    const lspilot = await this.server?.ready();
    if (!lspilot) return false;
    void vscode.commands.executeCommand("lspilot.chat.focus");
    try {
      const result = await this.state.ask(lspilot, args);
      log().info(`turn ${result.turnId} ended: ${result.stopReason}`);
      if (result.stopReason === "error") void vscode.window.showWarningMessage("lspilot: the turn ended with an error (see the chat)");
      return true;
    } catch (error) {
      if (error instanceof Error && error.message === STILL_RUNNING) void vscode.window.showWarningMessage(`lspilot: ${STILL_RUNNING}`);
      else void reportError("ask failed", error);
      return false;
    } finally {
      this.showStatus(); // a refused ask leaves the running turn's item
    }
  }

  private async cancel(): Promise<void> {
    const sessionId = this.state.cancelTarget() ?? this.transcript.sessionId;
    const lspilot = this.server?.lspilot;
    if (!sessionId || !lspilot) return;
    const { cancelled } = await lspilot.cancel(sessionId);
    if (!cancelled) void vscode.window.showInformationMessage("lspilot: nothing is running");
  }

  newSession(): void {
    this.state.newSession();
    this.changed.fire();
  }

  async pickSession(): Promise<void> {
    const lspilot = await this.server?.ready();
    if (!lspilot) return;
    const sessions = await lspilot.sessions();
    const items = [
      { label: "$(add) New session", sessionId: undefined as string | undefined },
      ...sessions.map((s) => ({
        label: `${s.running ? "$(sync~spin) " : ""}${s.title || s.sessionId}`,
        description: `${s.agent} · ${new Date(s.updated * 1000).toLocaleString()}`,
        sessionId: s.sessionId as string | undefined,
      })),
    ];
    const picked = await vscode.window.showQuickPick(items, { title: "lspilot sessions" });
    if (!picked) return;
    if (!picked.sessionId) return this.newSession();
    const running = sessions.find((s) => s.sessionId === picked.sessionId)?.running ?? false;
    this.state.show(await lspilot.history(picked.sessionId), running);
    this.changed.fire();
  }

  /** The status bar item while any turn runs (a turn of another session than the one shown too). */
  private showStatus(): void {
    const what = this.state.status();
    if (what === undefined) return this.status.hide();
    this.status.text = `$(sync~spin) lspilot: ${what}`;
    this.status.show();
  }

  dispose(): void {
    this.status.dispose();
    this.changed.dispose();
  }
}

/** The active editor's selection as `context` (just the file when nothing is selected). */
function selectionContext(): Pick<AskArgs, "context"> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.scheme !== "file") return {};
  const { document, selection } = editor;
  const context = { uri: document.uri.toString(), version: document.version };
  if (selection.isEmpty) return { context };
  const range = {
    start: { line: selection.start.line, character: selection.start.character },
    end: { line: selection.end.line, character: selection.end.character },
  };
  return { context: { ...context, range } };
}
