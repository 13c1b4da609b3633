/** Entry point: wires the daemon client, review, permissions, chat and navigation together. */
import * as vscode from "vscode";
import { Chat } from "./chat";
import { ChatView } from "./chatView";
import { ReviewQueue } from "./core/review";
import { log } from "./log";
import { navigationCommands } from "./navigation";
import { quickPickPrompt } from "./permissions";
import { quickPickQuestion } from "./questions";
import { ReviewUi } from "./review";
import { Server } from "./server";
import { affectsFollow, affectsServer, settings, toggleFollow } from "./settings";

let server: Server | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const queue = new ReviewQueue();
  const chat = new Chat();
  server = new Server({
    review: queue,
    permissions: quickPickPrompt,
    questions: quickPickQuestion,
    onUpdate: (update) => chat.onUpdate(update),
    onReview: (params) => chat.onReview(params),
  });
  chat.connect(server);
  const review = new ReviewUi(queue);
  const view = new ChatView(chat, queue);
  const running = server;
  server.onDidChangeRunning((up) => {
    if (up) return;
    queue.cancelAll(); // the daemon went away: its reviews cannot be answered...
    chat.onClosed(); // ...and its turns are over
  });
  context.subscriptions.push(
    log(),
    server,
    chat,
    review,
    view,
    vscode.window.registerWebviewViewProvider(ChatView.id, view, { webviewOptions: { retainContextWhenHidden: true } }),
    ...chat.commands(),
    ...review.commands(),
    ...navigationCommands(server),
    vscode.commands.registerCommand("lspilot.restart", () => running.restart()),
    vscode.commands.registerCommand("lspilot.showLog", () => log().show(true)),
    vscode.commands.registerCommand("lspilot.toggleFollow", toggleFollow),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (affectsServer(event)) void running.restart();
      else if (affectsFollow(event)) void running.follow(settings().follow);
    }),
  );
  await server.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
}
