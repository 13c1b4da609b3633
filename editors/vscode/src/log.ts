/** The "lspilot" log output channel. It is never revealed on its own: the user opens it. */
import * as vscode from "vscode";

let channel: vscode.LogOutputChannel | undefined;

export function log(): vscode.LogOutputChannel {
  channel ??= vscode.window.createOutputChannel("lspilot", { log: true });
  return channel;
}

/** Log `error` and tell the user in one line, with an optional action (never steals focus). */
export async function reportError(message: string, error: unknown, ...actions: string[]): Promise<string | undefined> {
  const detail = error instanceof Error ? error.message : String(error);
  log().error(`${message}: ${detail}`);
  return vscode.window.showErrorMessage(`lspilot: ${message}: ${detail}`, ...actions);
}
