/**
 * Test harness: a real `lspilot serve` over stdio (vscode-jsonrpc), the scripted model server
 * (`python -m daemon.scripted_model`) and an in-memory editor that holds open buffers and applies
 * `workspace/applyEdit` the way VS Code does. Waits are on events, never on sleeps.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from "vscode-jsonrpc/node";
import { LspilotClient } from "../src/core/client";
import { initializationOptions, type Rpc, type Update } from "../src/core/protocol";

export const REPO = path.resolve(__dirname, "..", "..", "..", "..");
const PYTHON = process.env["LSPILOT_PYTHON"] ?? path.join(REPO, ".venv", "bin", "python");
const LSPILOT = process.env["LSPILOT_BIN"] ?? path.join(path.dirname(PYTHON), "lspilot");
const DATA_DIR = process.env["LSPILOT_DATA_DIR"] ?? path.join(REPO, ".cache", "lspilot-data");
/** The longest any single wait may take before the test fails (a hang, not a speed check). */
const WAIT_LIMIT_MS = 90_000;

export type ToolCall = [string, Record<string, unknown>];

export interface TurnScript {
  text?: string;
  tool_calls?: ToolCall[];
  delay?: number;
  stall_after_chunks?: number;
  cut_after_chunks?: number;
  error?: number;
}

export interface ModelRequest {
  messages: { role: string; content: string | null }[];
}

/** The scripted OpenAI-compatible model server, in its own process. */
export class FakeModel {
  private constructor(
    private readonly process: ChildProcess,
    readonly apiBase: string,
  ) {}

  static async start(dir: string, turns: TurnScript[]): Promise<FakeModel> {
    const script = path.join(dir, "script.json");
    await fs.writeFile(script, JSON.stringify(turns));
    const child = spawn(PYTHON, ["-m", "daemon.scripted_model", script], {
      cwd: REPO,
      stdio: ["pipe", "pipe", "inherit"],
    });
    const lines = createInterface({ input: child.stdout! });
    const [first] = (await Promise.race([
      once(lines, "line"),
      once(child, "exit").then(([code]) => {
        throw new Error(`scripted model exited with ${String(code)}`);
      }),
    ])) as [string];
    lines.close();
    return new FakeModel(child, first.trim());
  }

  async state(): Promise<{ requests: ModelRequest[]; errors: string[]; remaining: number }> {
    const response = await fetch(this.apiBase.replace(/\/v1$/, "") + "/requests");
    return (await response.json()) as { requests: ModelRequest[]; errors: string[]; remaining: number };
  }

  /** The tool results the model was sent in its last request. */
  async lastToolResults(): Promise<string[]> {
    const { requests } = await this.state();
    const last = requests[requests.length - 1];
    return (last?.messages ?? []).filter((m) => m.role === "tool").map((m) => m.content ?? "");
  }

  async stop(): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    const exited = once(this.process, "exit");
    this.process.stdin!.end(); // it serves until stdin closes
    await exited;
  }
}

export interface Applied {
  uri: string;
  version: number;
  edits: { range: { start: { line: number }; end: { line: number } }; newText: string }[];
}

/** The daemon plus a tiny editor: buffers, applied edits, and every update received. */
export class Daemon {
  readonly updates: Update[] = [];
  readonly applied: Applied[] = [];
  /** The daemon's window/showDocument requests (following the agent), answered with success. */
  readonly shown: ShowDocumentParams[] = [];
  readonly buffers = new Map<string, { text: string; version: number }>();
  readonly client: LspilotClient;
  private readonly waiters = new Set<() => void>();
  private readonly stderr: string[] = [];

  private constructor(
    private readonly process: ChildProcess,
    readonly connection: MessageConnection,
    readonly workspace: string,
  ) {
    const record = (update: Update) => {
      this.updates.push(update);
      this.changed();
    };
    // One handler per method: the client's update handler (attach) replaces this one and records too.
    const rpc = rpcOf(connection, record);
    this.client = new LspilotClient(rpc);
    process.stderr!.on("data", (chunk: Buffer) => this.stderr.push(chunk.toString()));
    connection.onNotification("lspilot/update", record);
    connection.onNotification("window/logMessage", () => undefined);
    connection.onNotification("$/progress", () => undefined);
    connection.onRequest("workspace/applyEdit", (params: ApplyEditParams) => this.applyEdit(params));
    connection.onRequest("window/showDocument", (params: ShowDocumentParams) => {
      this.shown.push(params);
      this.changed();
      return { success: true };
    });
    connection.onRequest((method: string) => {
      if (method === "workspace/configuration") return [];
      return null; // registerCapability, workDoneProgress/create, ...
    });
  }

  static async start(home: string, workspace: string, model: FakeModel): Promise<Daemon> {
    const env = {
      PATH: `${path.dirname(LSPILOT)}:/usr/bin:/bin`,
      HOME: home,
      LSPILOT_DATA_DIR: DATA_DIR,
      LSPILOT_CONFIG_DIR: path.join(home, "user-config"),
      LSPILOT_MODEL: "openai/scripted",
      LSPILOT_API_BASE: model.apiBase,
      OPENAI_API_KEY: "sk-fake",
    };
    const child = spawn(LSPILOT, ["serve"], { cwd: workspace, env, stdio: ["pipe", "pipe", "pipe"] });
    const connection = createMessageConnection(
      new StreamMessageReader(child.stdout!),
      new StreamMessageWriter(child.stdin!),
    );
    const daemon = new Daemon(child, connection, workspace);
    connection.listen();
    const rootUri = pathToFileURL(workspace).href;
    await connection.sendRequest("initialize", {
      processId: process.pid,
      rootUri,
      workspaceFolders: [{ uri: rootUri, name: "ws" }],
      capabilities: {
        workspace: { applyEdit: true, workspaceEdit: { documentChanges: true }, executeCommand: {} },
        window: { workDoneProgress: true, showDocument: { support: true } },
      },
      initializationOptions: initializationOptions(false),
    });
    await connection.sendNotification("initialized", {});
    return daemon;
  }

  kinds(): string[] {
    return this.updates.map((u) => u.kind);
  }

  /** Resolve once `predicate` holds, re-checked on every message from the daemon. */
  async until(predicate: () => boolean, what = "a condition"): Promise<void> {
    if (predicate()) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`waited too long for ${what}; daemon stderr:\n${this.stderr.join("").slice(-2000)}`));
      }, WAIT_LIMIT_MS);
      const check = () => {
        if (!predicate()) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      this.waiters.add(check);
    });
  }

  /** Open `file` as an editor buffer (version 1). */
  async open(file: string): Promise<string> {
    const uri = pathToFileURL(file).href;
    const text = await fs.readFile(file, "utf8");
    this.buffers.set(uri, { text, version: 1 });
    await this.connection.sendNotification("textDocument/didOpen", {
      textDocument: { uri, languageId: "python", version: 1, text },
    });
    return uri;
  }

  /** Kill the daemon (as a crash would); resolves once its connection closed. */
  async kill(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.connection.onClose(() => resolve()));
    const exited = once(this.process, "exit");
    this.process.kill("SIGKILL");
    await Promise.all([closed, exited]);
  }

  async stop(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      const exited = once(this.process, "exit");
      await this.connection.sendRequest("shutdown");
      await this.connection.sendNotification("exit");
      await exited;
    }
    this.connection.dispose();
  }

  private changed(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  private async applyEdit(params: ApplyEditParams): Promise<{ applied: boolean }> {
    for (const change of params.edit.documentChanges ?? []) {
      const uri = change.textDocument.uri;
      const buffer = this.buffers.get(uri);
      if (!buffer || change.textDocument.version !== buffer.version) return { applied: false };
      this.applied.push({ uri, version: buffer.version, edits: change.edits });
      const lines = buffer.text.split(/(?<=\n)/);
      for (const edit of [...change.edits].sort((a, b) => b.range.start.line - a.range.start.line)) {
        lines.splice(edit.range.start.line, edit.range.end.line - edit.range.start.line, edit.newText);
      }
      const next = { text: lines.join(""), version: buffer.version + 1 };
      this.buffers.set(uri, next);
      await this.connection.sendNotification("textDocument/didChange", {
        textDocument: { uri, version: next.version },
        contentChanges: [{ text: next.text }],
      });
    }
    this.changed();
    return { applied: true };
  }
}

export interface ShowDocumentParams {
  uri: string;
  takeFocus?: boolean;
  selection?: { start: { line: number; character: number }; end: { line: number; character: number } };
}

interface ApplyEditParams {
  edit: { documentChanges?: { textDocument: { uri: string; version: number }; edits: Applied["edits"] }[] };
}

function rpcOf(connection: MessageConnection, record: (update: Update) => void): Rpc {
  return {
    sendRequest: (method, params, token) =>
      token === undefined
        ? connection.sendRequest(method, params)
        : connection.sendRequest(method, params, token as Parameters<MessageConnection["sendRequest"]>[2] & object),
    onRequest: (method, handler) => connection.onRequest(method, (params: unknown, token) => handler(params, token)),
    onNotification: (method, handler) =>
      connection.onNotification(method, (params: unknown) => {
        handler(params);
        if (method === "lspilot/update") record(params as Update);
      }),
  };
}

/** A scratch directory with a workspace (`ws/`) and a home; removed by `cleanup`. */
export async function scratch(files: Record<string, string>): Promise<{ dir: string; home: string; ws: string }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "lspilot-vscode-"));
  const ws = path.join(dir, "ws");
  const home = path.join(dir, "home");
  await fs.mkdir(ws);
  await fs.mkdir(home);
  for (const [name, text] of Object.entries(files)) await fs.writeFile(path.join(ws, name), text);
  return { dir, home, ws };
}

/** Everything one test needs, torn down in order by `close`. */
export async function setUp(files: Record<string, string>, turns: TurnScript[]) {
  const place = await scratch(files);
  const model = await FakeModel.start(place.dir, turns);
  const daemon = await Daemon.start(place.home, place.ws, model);
  return {
    ...place,
    model,
    daemon,
    async close(): Promise<void> {
      await daemon.stop();
      await model.stop();
      await fs.rm(place.dir, { recursive: true, force: true });
    },
  };
}
