/** The extension's settings (see `contributes.configuration` in package.json). */
import * as vscode from "vscode";

export const SECTION = "lspilot";

export interface Settings {
  /** The lspilot executable; `lspilot` finds it on PATH. */
  serverPath: string;
  /** Extra environment for `lspilot serve` (e.g. LSPILOT_MODEL). */
  serverEnv: Record<string, string>;
  /** Show each place the agent reads, finds or changes as it goes. */
  follow: boolean;
}

export function settings(): Settings {
  const config = vscode.workspace.getConfiguration(SECTION);
  return {
    serverPath: config.get<string>("server.path")?.trim() || "lspilot",
    serverEnv: config.get<Record<string, string>>("server.env") ?? {},
    follow: config.get<boolean>("follow") ?? false,
  };
}

/** True when a settings change needs the server restarted. */
export function affectsServer(event: vscode.ConfigurationChangeEvent): boolean {
  return event.affectsConfiguration(`${SECTION}.server`);
}

/** True when a settings change switches following the agent (no restart needed). */
export function affectsFollow(event: vscode.ConfigurationChangeEvent): boolean {
  return event.affectsConfiguration(`${SECTION}.follow`);
}

/** Switch following the agent in the user's settings (the change reaches the daemon). */
export function toggleFollow(): Thenable<void> {
  const config = vscode.workspace.getConfiguration(SECTION);
  return config.update("follow", !settings().follow, vscode.ConfigurationTarget.Global);
}

export function openSettings(): Thenable<unknown> {
  return vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.server.path`);
}
