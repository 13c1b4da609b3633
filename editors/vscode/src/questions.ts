/**
 * The agent's questions: a quick pick of its suggested answers that also takes what the user
 * types as the answer, or an input box when it suggests none.
 */
import * as vscode from "vscode";
import type { QuestionPrompt } from "./core/client";
import type { CancellationLike, QuestionParams } from "./core/protocol";

export const quickPickQuestion: QuestionPrompt = {
  ask(params: QuestionParams, token?: CancellationLike) {
    const title = `lspilot asks: ${params.question}`;
    if (params.options.length === 0) {
      const box = { title, prompt: "Your answer for the agent", ignoreFocusOut: true };
      return Promise.resolve(vscode.window.showInputBox(box, token as vscode.CancellationToken | undefined));
    }
    return new Promise<string | undefined>((resolve) => {
      const pick = vscode.window.createQuickPick();
      pick.title = title;
      pick.placeholder = "Pick an answer, or type your own and press Enter";
      pick.ignoreFocusOut = true;
      pick.items = params.options.map((label) => ({ label }));
      let answer: string | undefined;
      pick.onDidAccept(() => {
        answer = pick.selectedItems[0]?.label ?? (pick.value.trim() || undefined);
        pick.hide();
      });
      pick.onDidHide(() => {
        pick.dispose();
        resolve(answer);
      });
      token?.onCancellationRequested(() => pick.hide());
      pick.show();
    });
  },
};
