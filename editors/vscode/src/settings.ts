/** The extension's settings (see `contributes.configuration` in package.json). */
import * as vscode from "vscode";

export const SECTION = "lspilot";

export interface Settings {
  /** The lspilot executable; `lspilot` finds it on PATH. */
  serverPath: string;
  /** Extra environment for `lspilot serve` (e.g. LSPILOT_MODEL). */
  serverEnv: Record<string, string>;
}

export function settings(): Settings {
  const config = vscode.workspace.getConfiguration(SECTION);
  return {
    serverPath: config.get<string>("server.path")?.trim() || "lspilot",
    serverEnv: config.get<Record<string, string>>("server.env") ?? {},
  };
}

/** True when a settings change needs the server restarted. */
export function affectsServer(event: vscode.ConfigurationChangeEvent): boolean {
  return event.affectsConfiguration(`${SECTION}.server`);
}

export function openSettings(): Thenable<unknown> {
  return vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.server.path`);
}
