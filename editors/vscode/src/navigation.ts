/** lspilot.findReferences / goToImplementation / showCallers: the daemon's answer in VS Code's peek UI. */
import * as vscode from "vscode";
import { readFile } from "node:fs/promises";
import { answerFiles, answerPlaces, NAVIGATIONS, serverRoot } from "./core/navigation";
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
        const root = serverRoot(vscode.workspace.workspaceFolders?.map((folder) => folder.uri.fsPath), process.cwd());
        const lines = await linesOfFiles(answerFiles(root, answer));
        const locations = answerPlaces(root, answer, (file) => lines.get(file)).map(
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

/** Each file's lines: an open document's text (maybe unsaved, as the daemon saw it), else the disk's. */
async function linesOfFiles(files: string[]): Promise<Map<string, string[]>> {
  const open = new Map(vscode.workspace.textDocuments.map((doc) => [doc.uri.fsPath, doc]));
  const texts = await Promise.all(
    files.map((file) => (open.has(file) ? Promise.resolve(open.get(file)?.getText()) : readFile(file, "utf8").catch(() => undefined))),
  );
  const lines = new Map<string, string[]>();
  files.forEach((file, i) => {
    const text = texts[i];
    if (text !== undefined) lines.set(file, text.split(/\r\n|\r|\n/));
  });
  return lines;
}
