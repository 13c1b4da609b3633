/**
 * Starts `lspilot serve` with vscode-languageclient, restarts it, and exposes it as the core's
 * {@link Rpc}. A daemon that cannot start is one error message with a "Configure" action.
 * Every answer to the daemon's requests goes after the document changes the client still holds.
 */
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  type LanguageClientOptions,
  type MessageSignature,
  type ServerOptions,
} from "vscode-languageclient/node";
import { LspilotClient, type Handlers } from "./core/client";
import { initializationOptions, type DisposableLike, type Rpc } from "./core/protocol";
import { log, reportError } from "./log";
import { openSettings, settings } from "./settings";

export class Server implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private attached: DisposableLike[] = [];
  /** Our start under way, which a second start joins. */
  private starting: Promise<void> | undefined;
  private readonly stateChanged = new vscode.EventEmitter<boolean>();
  /** Fires true when the daemon is up, false when it stopped. */
  readonly onDidChangeRunning = this.stateChanged.event;
  lspilot: LspilotClient | undefined;
  /** `lspilot.follow` as the daemon's last (re)start was given it in its initializationOptions. */
  private startedFollowing: boolean | undefined;

  constructor(private readonly handlers: Handlers) {}

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** The daemon's client, starting it first if needed; undefined when it cannot start. */
  async ready(): Promise<LspilotClient | undefined> {
    if (!hasFolder()) {
      void vscode.window.showInformationMessage("lspilot: open a folder first; the agent works in the workspace's first folder");
      return undefined;
    }
    if (!this.running) await this.start();
    return this.running ? this.lspilot : undefined;
  }

  /**
   * Start the daemon, in a window with a folder only: without one the daemon would take the
   * directory it runs in (the editor's: the home folder or "/") as its workspace, where the
   * agent reads without asking. Adding a first folder reloads the window, which starts it.
   * A start under way is waited for, never doubled: ours, or vscode-languageclient's restart of
   * a daemon that crashed (a second client ran a second daemon beside the restarted one).
   */
  start(): Promise<void> {
    this.starting ??= this.launch().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async launch(): Promise<void> {
    if (!hasFolder()) return void log().info("no folder is open: lspilot serve starts in a window with one");
    if (this.client?.state === State.Starting) return this.restarted(this.client);
    await this.stop(); // a client that gave up restarting, or never started: its handlers go with it
    const { serverPath, serverEnv } = settings();
    const serverOptions: ServerOptions = {
      command: serverPath,
      args: ["serve"],
      options: { env: { ...process.env, ...serverEnv } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      // Read at each start: a daemon restarted after a crash follows the settings as they are
      // now, not as they were at the first start (lspilot.server.* changes restart it anyway).
      initializationOptions: () => initializationOptions((this.startedFollowing = settings().follow)),
      outputChannel: log(),
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      middleware: {
        sendNotification: (type, next, params) => (methodOf(type) === FLUSH ? Promise.resolve() : next(type, params)),
      },
    };
    // The id "lspilot" makes the client read `lspilot.trace.server`.
    const client = new LanguageClient("lspilot", "lspilot", serverOptions, clientOptions);
    // lspilot.* commands are the extension's own (they add UI); do not register the daemon's.
    client.getFeature(ExecuteCommandRequest.method).register = () => undefined;
    const lspilot = new LspilotClient(rpcOf(client));
    client.onDidChangeState((event) => {
      if (event.newState !== State.Running) lspilot.withdrawPrompts(); // the requests died with the daemon
      // Switched while it started (after its initializationOptions went): tell it now.
      else if (settings().follow !== this.startedFollowing) void this.follow(settings().follow);
      this.stateChanged.fire(event.newState === State.Running);
    });
    this.client = client;
    this.lspilot = lspilot;
    this.attached = this.lspilot.attach(this.handlers);
    try {
      await client.start();
      log().info(`started ${serverPath} serve`);
    } catch (error) {
      await this.stop();
      // Not awaited: the message stays until the user acts, and start() must not wait for that.
      void reportError(`could not start "${serverPath} serve"`, error, "Configure", "Show Log").then((choice) => {
        if (choice === "Configure") void openSettings();
        if (choice === "Show Log") log().show(true);
      });
    }
  }

  /** Wait for vscode-languageclient's restart of a crashed daemon (it says itself if that fails). */
  private async restarted(client: LanguageClient): Promise<void> {
    try {
      await client.start(); // the start under way
    } catch (error) {
      log().warn(`the restart of lspilot serve failed: ${String(error)}`);
    }
  }

  /** Tell the running daemon to follow the agent or stop (a daemon started later reads the setting). */
  async follow(enabled: boolean): Promise<void> {
    if (!this.running || !this.lspilot) return;
    try {
      await this.lspilot.follow(enabled);
      vscode.window.setStatusBarMessage(`lspilot: ${enabled ? "following" : "not following"} the agent`, 3000);
    } catch (error) {
      void reportError("could not switch following the agent", error);
    }
  }

  async stop(): Promise<void> {
    this.lspilot?.withdrawPrompts();
    const client = this.client;
    this.client = undefined;
    this.lspilot = undefined;
    for (const d of this.attached) d.dispose();
    this.attached = [];
    if (!client) return;
    if (client.state === State.Starting) await client.start().catch(() => undefined); // cannot stop while starting
    await client.dispose().catch(() => undefined); // it logs a failed stop; one that never started has none
  }

  async restart(): Promise<void> {
    await this.starting;
    await this.stop();
    await this.start();
  }

  dispose(): void {
    void this.stop();
    this.stateChanged.dispose();
  }
}

function hasFolder(): boolean {
  return (vscode.workspace.workspaceFolders?.length ?? 0) > 0;
}

/**
 * A notification that never leaves the extension (the middleware drops it). Sending it is what
 * makes vscode-languageclient deliver the `didChange`s it holds back first: it batches them for up
 * to 250 ms, and flushes them before each request or notification it sends, but not before the
 * answer to a request of the daemon's.
 */
const FLUSH = "lspilot/flushDocumentChanges";

function methodOf(type: string | MessageSignature): string {
  return typeof type === "string" ? type : type.method;
}

/**
 * Deliver the document changes the client holds back. A review's answer must not overtake them:
 * the user who types in the file under review and accepts at once has the daemon judge the accept
 * against the text they typed (it is told the file changed), not the text before.
 */
async function flushDocumentChanges(client: LanguageClient): Promise<void> {
  try {
    await client.sendNotification(FLUSH);
  } catch (error) {
    log().warn(`could not deliver the pending document changes: ${String(error)}`); // the client stopped
  }
}

function rpcOf(client: LanguageClient): Rpc {
  return {
    // Never pass an undefined token: vscode-jsonrpc would send [params, null] as the params.
    sendRequest: (method, params, token) =>
      token === undefined
        ? client.sendRequest(method, params)
        : client.sendRequest(method, params, token as vscode.CancellationToken),
    onRequest: (method, handler) =>
      client.onRequest(method, async (params: unknown, token: vscode.CancellationToken) => {
        const answer = await handler(params, token);
        await flushDocumentChanges(client);
        return answer;
      }),
    onNotification: (method, handler) => client.onNotification(method, (params: unknown) => handler(params)),
  };
}
