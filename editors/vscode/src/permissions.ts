/**
 * Permission prompts as a quick pick that stays open until answered (or the daemon withdraws the
 * request), plus optional feedback.
 */
import * as vscode from "vscode";
import { permissionTitle, type PermissionChoice, type PermissionPrompt } from "./core/permissions";
import type { CancellationLike, RequestPermissionParams } from "./core/protocol";

const ICONS: Record<PermissionChoice["kind"], string> = {
  allow_once: "$(check)",
  allow_always: "$(check-all)",
  reject_once: "$(close)",
  reject_always: "$(circle-slash)",
};

export const quickPickPrompt: PermissionPrompt = {
  async pick(params: RequestPermissionParams, choices: PermissionChoice[], token?: CancellationLike) {
    const items = choices.map((choice) => ({
      label: `${ICONS[choice.kind]} ${choice.label}`,
      description: choice.asksFeedback ? "you can say why" : "",
      detail: choice.detail,
      choice,
    }));
    const picked = await vscode.window.showQuickPick(
      items,
      { title: permissionTitle(params), placeHolder: params.detail || "Allow this?", ignoreFocusOut: true },
      token as vscode.CancellationToken | undefined, // the language client's own token
    );
    return picked?.choice;
  },
  async feedback(choice: PermissionChoice, token?: CancellationLike) {
    return vscode.window.showInputBox(
      {
        title: `${choice.label}: feedback for the agent`,
        prompt: "Optional. With feedback the agent goes on; without, the turn stops.",
        ignoreFocusOut: true,
      },
      token as vscode.CancellationToken | undefined,
    );
  },
};
