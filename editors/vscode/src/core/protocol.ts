/**
 * The lspilot editor protocol (docs/protocol.md) as TypeScript types, and the minimal RPC surface
 * the rest of the extension needs. Nothing here imports `vscode`: the node tests use it directly.
 */

export const Methods = {
  update: "lspilot/update",
  reviewEdit: "lspilot/reviewEdit",
  requestPermission: "lspilot/requestPermission",
  question: "lspilot/question",
  executeCommand: "workspace/executeCommand",
} as const;

export const Commands = {
  ask: "lspilot.ask",
  cancel: "lspilot.cancel",
  sessions: "lspilot.sessions",
  history: "lspilot.history",
  navigate: "lspilot.navigate",
  resolve: "lspilot.resolve",
  follow: "lspilot.follow",
} as const;

/** What the extension tells the daemon it implements (initializationOptions.lspilot), and
 * whether the daemon should start following the agent (`window/showDocument` on each place). */
export function initializationOptions(follow: boolean): { lspilot: Record<string, boolean> } {
  return { lspilot: { review: true, permissions: true, questions: true, follow } };
}

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface AskContext {
  uri: string;
  range?: Range;
  version?: number;
}

export interface AskArgs {
  sessionId?: string;
  prompt: string;
  agent?: string;
  model?: string;
  context?: AskContext;
}

export type StopReason = "end" | "length" | "filtered" | "max_steps" | "cancelled" | "rejected" | "error";

export interface AskResult {
  sessionId: string;
  turnId: string;
  stopReason: StopReason;
}

export interface SessionInfo {
  sessionId: string;
  title: string;
  agent: string;
  updated: number;
  running: boolean;
}

export interface HistoryPart {
  kind: string;
  text?: string;
  tool?: string;
  input?: unknown;
  state?: string;
  output?: string;
  title?: string;
  [key: string]: unknown;
}

export interface HistoryMessage {
  id: string;
  role: string;
  parts: HistoryPart[];
}

export interface History {
  id: string;
  root: string;
  messages: HistoryMessage[];
}

export type NavigateOperation = "findReferences" | "goToImplementation" | "incomingCalls" | "goToDefinition";

export interface NavigateArgs {
  operation: NavigateOperation;
  uri?: string;
  position?: Position;
  symbol?: string;
  query?: string;
}

/** A place in an lsp tool answer: workspace-relative (or absolute) path, 1-based line and column. */
export interface NavLocation {
  path: string;
  line: number;
  character: number;
  endLine?: number;
  endCharacter?: number;
}

export interface NavCall extends NavLocation {
  name: string;
  kind: string;
  detail?: string;
  fromPath?: string;
  fromRanges?: Omit<NavLocation, "path">[];
}

export interface NavigateAnswer {
  title: string;
  text: string;
  locations?: NavLocation[];
  calls?: NavCall[];
  [key: string]: unknown;
}

export interface ResolveArgs {
  proposalId: string;
  hunkIds?: string[];
  action: "accept" | "reject";
  feedback?: string;
}

export type ToolStatus = "pending" | "running" | "completed" | "error";

interface UpdateBase {
  sessionId: string;
  turnId: string;
}

export type Update = UpdateBase &
  (
    | {
        kind: "status";
        status: string;
        prompt?: string;
        message?: string;
        proposalId?: string;
        attempt?: number;
        wait?: number;
        error?: string;
        messageId?: string;
        discarded?: boolean;
      }
    | { kind: "text" | "reasoning"; delta: string; messageId?: string | null }
    | {
        kind: "toolCall";
        id: string;
        tool: string;
        status: ToolStatus;
        title?: string;
        input?: unknown;
        metadata?: unknown;
        output?: string;
      }
    | { kind: "plan"; todos: { id: string; content: string; status: string; priority?: string }[] }
    | { kind: "turnEnd"; stopReason: StopReason; error?: string | null }
  );

export interface Hunk {
  id: string;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  oldText: string;
  newText: string;
}

export interface ReviewEditParams {
  sessionId: string;
  toolCallId: string;
  proposalId: string;
  /** The file whose text is `oldText`. */
  uri: string;
  /** Where a move puts the file (null otherwise). */
  newUri: string | null;
  baseVersion: number | null;
  isNewFile: boolean;
  /** The change deletes the file (`newText` is then empty). */
  isDeletion: boolean;
  oldText: string;
  newText: string;
  hunks: Hunk[];
}

export type ReviewDecision = "accept" | "reject" | "partial" | "cancelled";

export interface ReviewReply {
  decision: ReviewDecision;
  acceptedHunkIds?: string[];
  finalText?: string;
  feedback?: string;
}

export type PermissionKind = "allow_once" | "allow_always" | "reject_once" | "reject_always";

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: PermissionKind;
}

export interface RequestPermissionParams {
  sessionId: string;
  toolCallId: string;
  permission: string;
  patterns: string[];
  title: string;
  detail?: string;
  /** The patterns an "always" answer remembers, and those it cannot (it counts as once for them). */
  always?: string[];
  alwaysRefused?: { pattern: string; reason: string }[];
  options: PermissionOption[];
}

export type PermissionReply = { optionId: string; feedback?: string } | { cancelled: true };

/** The agent's question tool: `options` are suggestions, the user may answer in their own words. */
export interface QuestionParams {
  sessionId: string;
  question: string;
  options: string[];
}

export type QuestionReply = { answer: string } | { cancelled: true };

/** A cancellation signal, as both vscode-jsonrpc and vscode-languageclient hand to handlers. */
export interface CancellationLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): void };
}

export interface DisposableLike {
  dispose(): void;
}

/**
 * The little of a JSON-RPC connection lspilot needs; adapters wrap a vscode-languageclient
 * `LanguageClient` (the extension) or a vscode-jsonrpc `MessageConnection` (the node tests).
 */
export interface Rpc {
  sendRequest(method: string, params: unknown, token?: unknown): Promise<unknown>;
  onRequest(method: string, handler: (params: unknown, token: CancellationLike) => Promise<unknown>): DisposableLike;
  onNotification(method: string, handler: (params: unknown) => void): DisposableLike;
}
