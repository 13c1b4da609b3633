/**
 * Review in VS Code: each proposal opens as a diff (the file as it is vs. an editable in-memory
 * document holding the proposal), with "Accept | Reject" CodeLenses above each hunk and
 * editor-title actions for the whole file. The bookkeeping is core/review.ts; this file only
 * shows it. Nothing is written here: the daemon applies accepted hunks with workspace/applyEdit.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import { proposedName, queuedNote, reviewLabel, reviewTitle, sameLines, type Proposal, type ReviewQueue } from "./core/review";
import { log } from "./log";

export const SCHEME = "lspilot-proposal";

/** In-memory files for the proposed (and, for unopened files, the original) side. */
class ProposalFiles implements vscode.FileSystemProvider {
  private readonly files = new Map<string, { data: Uint8Array; mtime: number }>();
  private readonly emitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.emitter.event;

  set(uri: vscode.Uri, text: string): void {
    const known = this.files.has(uri.toString());
    this.files.set(uri.toString(), { data: new TextEncoder().encode(text), mtime: Date.now() });
    this.emitter.fire([{ type: known ? vscode.FileChangeType.Changed : vscode.FileChangeType.Created, uri }]);
  }

  /** Forget the files of every proposal `keep` refuses (the first part of the path is its id). */
  drop(keep: (proposalId: string) => boolean): void {
    for (const key of [...this.files.keys()]) if (!keep(vscode.Uri.parse(key).path.split("/")[1] ?? "")) this.files.delete(key);
  }

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  stat(uri: vscode.Uri): vscode.FileStat {
    const file = this.get(uri);
    return { type: vscode.FileType.File, ctime: file.mtime, mtime: file.mtime, size: file.data.byteLength };
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(): void {}

  readFile(uri: vscode.Uri): Uint8Array {
    return this.get(uri).data;
  }

  writeFile(uri: vscode.Uri, content: Uint8Array): void {
    this.files.set(uri.toString(), { data: content, mtime: Date.now() });
  }

  delete(uri: vscode.Uri): void {
    this.files.delete(uri.toString());
  }

  rename(): void {
    throw vscode.FileSystemError.NoPermissions("proposals cannot be renamed");
  }

  private get(uri: vscode.Uri): { data: Uint8Array; mtime: number } {
    const file = this.files.get(uri.toString());
    if (!file) throw vscode.FileSystemError.FileNotFound(uri);
    return file;
  }
}

function proposedUri(proposal: Proposal): vscode.Uri {
  const name = proposedName(proposal.params); // a move's new name
  return vscode.Uri.from({ scheme: SCHEME, path: `/${proposal.id}/proposed/${name}` });
}

function originalUri(proposal: Proposal): vscode.Uri {
  // A file the daemon does not know open stays closed: opening it would move its version.
  if (proposal.params.baseVersion !== null && !proposal.params.isNewFile) return vscode.Uri.parse(proposal.params.uri);
  const name = path.posix.basename(vscode.Uri.parse(proposal.params.uri).path);
  return vscode.Uri.from({ scheme: SCHEME, path: `/${proposal.id}/original/${name}` });
}

/** Shows the queue's current proposal and turns the user's clicks into queue decisions. */
export class ReviewUi implements vscode.Disposable, vscode.CodeLensProvider {
  private readonly files = new ProposalFiles();
  private readonly lensesChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensesChanged.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly queue: ReviewQueue) {
    this.disposables.push(
      vscode.workspace.registerFileSystemProvider(SCHEME, this.files, { isCaseSensitive: true }),
      vscode.languages.registerCodeLensProvider([{ scheme: SCHEME }, { scheme: "file" }], this),
      this.lensesChanged,
    );
    queue.onDidChangeCurrent((proposal) => void this.show(proposal));
    queue.onDidChangeProposal((proposal) => void this.refresh(proposal));
    queue.onDidChangeWaiting(() => this.lensesChanged.fire()); // the count of queued reviews
  }

  commands(): vscode.Disposable[] {
    const register = vscode.commands.registerCommand;
    return [
      register("lspilot.acceptHunk", (id?: unknown, hunk?: unknown) => this.onHunk("accept", id, hunk)),
      register("lspilot.rejectHunk", (id?: unknown, hunk?: unknown) => this.onHunk("reject", id, hunk)),
      register("lspilot.acceptAll", (id?: unknown) => this.onFile("accept", id)),
      register("lspilot.rejectAll", (id?: unknown) => this.onFile("reject", id)),
      register("lspilot.openReview", (id?: string) => this.open(id)),
    ];
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const proposal = this.owning(document.uri); // any pending review's diff can be answered
    if (!proposal) return [];
    const proposed = document.uri.toString() === proposedUri(proposal).toString();
    if (proposed) proposal.noteProposedSide(document.getText()); // lenses follow the user's edits
    const lenses: vscode.CodeLens[] = [];
    for (const place of proposed ? proposal.sideLayout() : proposal.layout()) {
      if (place.state !== "pending") continue;
      const first = proposed ? place.line : place.hunk.oldStart - 1;
      const line = Math.max(0, Math.min(first, document.lineCount - 1));
      const range = new vscode.Range(line, 0, line, 0);
      const args = [proposal.id, place.hunk.id];
      lenses.push(
        new vscode.CodeLens(range, { title: "$(check) Accept", command: "lspilot.acceptHunk", arguments: args }),
        new vscode.CodeLens(range, { title: "$(close) Reject", command: "lspilot.rejectHunk", arguments: args }),
      );
    }
    const next = this.queue.proposals[1];
    if (proposed && next && proposal === this.queue.current) {
      // Above the first line of the one under review: how many wait behind it (it opens the next).
      const title = `$(layers) ${queuedNote(this.queue.waiting, next.params)}`;
      lenses.unshift(new vscode.CodeLens(new vscode.Range(0, 0, 0, 0), { title, command: "lspilot.openReview", arguments: [next.id] }));
    }
    return lenses;
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }

  /** The pending proposal whose review diff shows `uri` (either side); the one under review first. */
  private owning(uri: vscode.Uri | undefined): Proposal | undefined {
    const key = uri?.toString();
    if (key === undefined) return undefined;
    return this.queue.proposals.find((p) => proposedUri(p).toString() === key || originalUri(p).toString() === key);
  }

  /**
   * What a command acts on: the proposal it names (a CodeLens), else the one whose diff it was
   * run from (the editor title passes its file; a key or the palette, the active editor's, else
   * the one under review).
   */
  private target(arg: unknown): Proposal | undefined {
    if (typeof arg === "string") return this.queue.get(arg);
    if (arg instanceof vscode.Uri) return this.owning(arg); // another diff (git's) is no review
    return this.owning(vscode.window.activeTextEditor?.document.uri) ?? this.queue.current;
  }

  /** The proposed side's text as the editor holds it (with the user's unsaved edits). */
  private sideText(proposal: Proposal): string | undefined {
    const uri = proposedUri(proposal).toString();
    return vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri)?.getText();
  }

  /**
   * A review link or the command: a queued review becomes the one under review (the queue
   * shows it); a review no longer pending leaves the one open as it is.
   */
  private async open(proposalId?: string): Promise<void> {
    const before = this.queue.current;
    const target = this.queue.toOpen(typeof proposalId === "string" ? proposalId : undefined);
    if ("message" in target) return void vscode.window.showInformationMessage(`lspilot: ${target.message}`);
    if (this.queue.current === before) await this.show(target.proposal);
  }

  private async show(proposal: Proposal | undefined): Promise<void> {
    void vscode.commands.executeCommand("setContext", "lspilot.reviewing", this.queue.reviewing);
    this.lensesChanged.fire();
    await this.closeStale();
    if (!proposal) return;
    const right = proposedUri(proposal);
    this.files.set(right, proposal.sideText());
    const left = originalUri(proposal);
    if (left.scheme === SCHEME) this.files.set(left, proposal.params.oldText);
    log().info(`review ${proposal.id}: ${proposal.params.uri}, ${proposal.hunks.length} hunk(s)`);
    await vscode.commands.executeCommand("vscode.diff", left, right, reviewTitle(proposal.params), { preview: false });
  }

  /** After a decision: redraw the proposed side (a rejected hunk leaves it) and the lenses. */
  private async refresh(proposal: Proposal): Promise<void> {
    this.lensesChanged.fire();
    const uri = proposedUri(proposal);
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    const text = proposal.sideText();
    if (!document || sameLines(document.getText(), text)) return; // VS Code's line endings are its own
    if (!document.isDirty) {
      this.files.set(uri, text);
      return;
    }
    const edit = new vscode.WorkspaceEdit();
    edit.replace(uri, new vscode.Range(0, 0, document.lineCount, 0), text);
    await vscode.workspace.applyEdit(edit);
  }

  private async onHunk(action: "accept" | "reject", proposalId?: unknown, hunkId?: unknown): Promise<void> {
    const proposal = this.target(proposalId);
    if (!proposal) return void vscode.window.showInformationMessage("lspilot: nothing to review");
    const hunk = typeof hunkId === "string" ? hunkId : this.hunkAtCursor(proposal);
    if (!hunk) return;
    const side = this.sideText(proposal);
    const finishing = proposal.layout().filter((p) => p.state === "pending").length === 1;
    if (action === "accept") this.queue.accept(proposal.id, hunk, side);
    else this.queue.reject(proposal.id, hunk, side);
    if (finishing) await this.close(proposal);
  }

  private async onFile(action: "accept" | "reject", proposalId?: unknown): Promise<void> {
    const proposal = this.target(proposalId);
    if (!proposal) return void vscode.window.showInformationMessage("lspilot: nothing to review");
    if (action === "accept") {
      this.queue.acceptAll(proposal.id, this.sideText(proposal));
    } else {
      const feedback = await vscode.window.showInputBox({
        title: `Reject the change to ${reviewLabel(proposal.params)}`,
        prompt: "Tell the agent why (optional; Escape rejects without a word)",
        ignoreFocusOut: true,
      });
      // The review may have ended while the box was open (its turn cancelled, the daemon gone).
      if (!this.queue.get(proposal.id)) return;
      this.queue.rejectAll(proposal.id, feedback || undefined);
    }
    await this.close(proposal);
  }

  /**
   * The pending hunk under (or else nearest after) the cursor in the review's editor, on either
   * side of its diff; the first pending one from elsewhere.
   */
  private hunkAtCursor(proposal: Proposal): string | undefined {
    proposal.noteProposedSide(this.sideText(proposal)); // the cursor is in the side as the user edited it
    const editor = vscode.window.activeTextEditor;
    const uri = editor?.document.uri.toString();
    const line = editor?.selection.active.line ?? 0;
    if (uri === originalUri(proposal).toString()) return proposal.pendingAt(line, "original");
    return proposal.pendingAt(uri === proposedUri(proposal).toString() ? line : 0, "proposed");
  }

  /** Close the proposal's diff and forget its documents. */
  private async close(proposal: Proposal): Promise<void> {
    const right = proposedUri(proposal).toString();
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === right);
    if (document?.isDirty) await document.save(); // into memory: no "save changes?" prompt
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === right);
    if (tabs.length) await vscode.window.tabGroups.close(tabs);
    this.files.drop((id) => id !== proposal.id);
  }

  /**
   * The daemon cancelled or the review ended elsewhere: close what is left open and forget the
   * proposals of reviews that are over. A proposed side the user edited is saved first (into
   * memory), as {@link close} does: closed dirty, the diff stayed open behind VS Code's "save
   * changes?" prompt.
   */
  async closeStale(): Promise<void> {
    const live = new Set(this.queue.proposals.map((p) => p.id));
    const stale = (uri: vscode.Uri) => uri.scheme === SCHEME && !live.has(uri.path.split("/")[1] ?? "");
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && stale(tab.input.modified));
    for (const document of vscode.workspace.textDocuments) {
      if (document.isDirty && stale(document.uri)) await document.save();
    }
    this.files.drop((id) => live.has(id)); // after the saves, which write them again
    if (tabs.length) await vscode.window.tabGroups.close(tabs);
  }
}
