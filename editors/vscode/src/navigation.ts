/** lspilot.findReferences / goToImplementation / showCallers: the daemon's answer in VS Code's peek UI. */
import * as vscode from "vscode";
import { answerPlaces, NAVIGATIONS } from "./core/navigation";
import { log, reportError } from "./log";
import type { Server } from "./server";

export function navigationCommands(server: Server): vscode.Disposable[] {
  return Object.entries(NAVIGATIONS).map(([name, operation]) =>
    vscode.commands.registerCommand(`lspilot.${name}`, async () => {
      const editor = vscode.window.activeTextEditor;
      if (!editor) return void vscode.window.showInformationMessage("lspilot: put the cursor on a symbol first");
      const lspilot = await server.ready();
      if (!lspilot) return;
      const position = editor.selection.active;
      try {
        const answer = await vscode.window.withProgress(
          { location: vscode.ProgressLocation.Window, title: `lspilot: ${name}` },
          () =>
            lspilot.navigate({
              operation,
              uri: editor.document.uri.toString(),
              position: { line: position.line, character: position.character },
            }),
        );
        const root = vscode.workspace.getWorkspaceFolder(editor.document.uri)?.uri.fsPath ?? "";
        const locations = answerPlaces(root, answer).map(
          (place) =>
            new vscode.Location(
              vscode.Uri.file(place.file),
              new vscode.Range(place.range.start.line, place.range.start.character, place.range.end.line, place.range.end.character),
            ),
        );
        log().info(`${name}: ${answer.title} (${locations.length} places)`);
        if (!locations.length) return void vscode.window.showInformationMessage(`lspilot: ${answer.title || "nothing found"}`);
        await vscode.commands.executeCommand("editor.action.peekLocations", editor.document.uri, position, locations, "peek");
      } catch (error) {
        await reportError(name, error);
      }
    }),
  );
}
