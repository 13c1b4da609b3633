/**
 * Review bookkeeping for `lspilot/reviewEdit`: which hunks of a proposal the user accepted or
 * rejected, the proposed text as it stands, the reply to the daemon, and the queue that shows
 * one proposal at a time. Plain TypeScript (no `vscode`), driven by src/review.ts in the editor
 * and directly by the node tests.
 */
import type { CancellationLike, Hunk, ReviewEditParams, ReviewReply } from "./protocol";

export type HunkState = "pending" | "accepted" | "rejected";

/** Lines with their "\n" kept; the last may lack one (as the daemon's tools/diff.py splits). */
export function splitLines(text: string): string[] {
  const lines = text.split("\n");
  const last = lines.pop() ?? "";
  return [...lines.map((line) => line + "\n"), ...(last ? [last] : [])];
}

/**
 * Whether two texts are the same but maybe for their line endings ("\r\n" or "\n"). VS Code gives
 * a document one line ending, the most common, so the proposed side of a file with mixed endings
 * reads back with other endings than the daemon sent: that is no edit of the user's.
 */
export function sameLines(a: string, b: string): boolean {
  return a === b || a.replaceAll("\r\n", "\n") === b.replaceAll("\r\n", "\n");
}

/** `oldText` with the given hunks applied (hunks come from the daemon, in order). */
export function applyHunks(oldText: string, hunks: readonly Hunk[], applied: (hunk: Hunk) => boolean): string {
  const old = splitLines(oldText);
  const out: string[] = [];
  let at = 0;
  for (const hunk of [...hunks].sort((a, b) => a.oldStart - b.oldStart)) {
    const start = hunk.oldStart - 1;
    out.push(...old.slice(at, start), applied(hunk) ? hunk.newText : hunk.oldText);
    at = start + hunk.oldLines;
  }
  out.push(...old.slice(at));
  return out.join("");
}

/**
 * Where lines `line` .. `line + count` of `before` (count 0: the point before `line`) are in
 * `after`, an edited copy; undefined when the edit touched them. The edit is taken as one
 * block: the lines all texts share at the start and at the end are the untouched ones.
 */
export function mapLines(before: readonly string[], after: readonly string[], line: number, count: number): number | undefined {
  const most = Math.min(before.length, after.length);
  let prefix = 0;
  while (prefix < most && sameLines(before[prefix]!, after[prefix]!)) prefix += 1;
  let suffix = 0;
  while (suffix < most - prefix && sameLines(before[before.length - 1 - suffix]!, after[after.length - 1 - suffix]!)) suffix += 1;
  if (line + count <= prefix) return line;
  if (line >= before.length - suffix) return line + after.length - before.length;
  return undefined;
}

/** Where a hunk sits in the proposed text: 0-based first line and line count (0: a deletion). */
export interface HunkPlace {
  hunk: Hunk;
  state: HunkState;
  line: number;
  lines: number;
}

/** One file's proposal under review. */
export class Proposal {
  private readonly states = new Map<string, HunkState>();
  /** Accepted as a whole file: a change without hunks (an empty new file, a move that changes
   * no line, the deletion of an empty file) has no hunk whose acceptance says so. */
  private acceptedWhole = false;
  /** The proposed side's text when the user edited it (set by the editor), else undefined. */
  editedText: string | undefined;

  constructor(readonly params: ReviewEditParams) {
    for (const hunk of params.hunks) this.states.set(hunk.id, "pending");
  }

  get id(): string {
    return this.params.proposalId;
  }

  get hunks(): readonly Hunk[] {
    return this.params.hunks;
  }

  state(hunkId: string): HunkState {
    const state = this.states.get(hunkId);
    if (state === undefined) throw new Error(`proposal ${this.id} has no hunk ${hunkId}`);
    return state;
  }

  /**
   * Take in the proposed side's text as the editor holds it: when it is not what the hunk
   * decisions give, the user edited it and that text is what they want (`finalText`).
   */
  noteProposedSide(text: string | undefined): void {
    if (text === undefined) return;
    this.editedText = sameLines(text, this.proposedText()) ? undefined : text;
  }

  /** The proposed side as it should be shown: the user's edit, else the hunk decisions' result. */
  sideText(): string {
    return this.editedText ?? this.proposedText();
  }

  accept(hunkId: string, side?: string): void {
    this.noteProposedSide(side);
    this.set(hunkId, "accepted");
  }

  /**
   * Reject one hunk; in a user-edited proposed side its lines go back to the old text, wherever
   * the user's edits above moved them (lines the user edited themselves stay as they are).
   */
  reject(hunkId: string, side?: string): void {
    this.noteProposedSide(side);
    const edited = this.editedText;
    const place = this.sideLayout().find((p) => p.hunk.id === hunkId);
    this.set(hunkId, "rejected");
    if (edited === undefined || place === undefined) return;
    const lines = splitLines(edited);
    if (sameLines(lines.slice(place.line, place.line + place.lines).join(""), place.hunk.newText)) {
      lines.splice(place.line, place.lines, ...splitLines(place.hunk.oldText));
    }
    this.noteProposedSide(lines.join(""));
  }

  /** Accept every hunk still pending (explicit rejections stand). */
  acceptAll(side?: string): void {
    this.noteProposedSide(side);
    this.acceptedWhole = true;
    for (const [id, state] of this.states) if (state === "pending") this.states.set(id, "accepted");
  }

  /** Reject the whole file. */
  rejectAll(): void {
    for (const id of this.states.keys()) this.states.set(id, "rejected");
    this.acceptedWhole = false;
    this.editedText = undefined;
  }

  /** Every hunk decided: the review can be answered. */
  get decided(): boolean {
    return [...this.states.values()].every((state) => state !== "pending");
  }

  get acceptedIds(): string[] {
    return this.hunks.filter((h) => this.states.get(h.id) === "accepted").map((h) => h.id);
  }

  /** The proposed side as the user sees it: every hunk not rejected applied to the old text. */
  proposedText(): string {
    return applyHunks(this.params.oldText, this.hunks, (h) => this.states.get(h.id) !== "rejected");
  }

  /** Where each hunk that is not rejected sits in {@link proposedText}. */
  layout(): HunkPlace[] {
    const places: HunkPlace[] = [];
    let shift = 0; // lines the proposed text gained (or lost) above the current hunk
    for (const hunk of [...this.hunks].sort((a, b) => a.oldStart - b.oldStart)) {
      const state = this.state(hunk.id);
      if (state === "rejected") continue;
      places.push({ hunk, state, line: hunk.oldStart - 1 + shift, lines: hunk.newLines });
      shift += hunk.newLines - hunk.oldLines;
    }
    return places;
  }

  /**
   * Where each hunk that is not rejected sits in {@link sideText}: as {@link layout}, moved by the
   * user's edits of the proposed side (a hunk whose own lines they edited keeps its place).
   */
  sideLayout(): HunkPlace[] {
    const places = this.layout();
    if (this.editedText === undefined) return places;
    const before = splitLines(this.proposedText());
    const after = splitLines(this.editedText);
    return places.map((place) => ({ ...place, line: mapLines(before, after, place.line, place.lines) ?? place.line }));
  }

  /**
   * The pending hunk at `line` (0-based) of one side of the review diff, else the nearest after
   * it, else the last: on the proposed side as the user edited it, or on the original side (the
   * file as it is, where each hunk sits at its old lines).
   */
  pendingAt(line: number, side: "proposed" | "original"): string | undefined {
    const places =
      side === "proposed"
        ? this.sideLayout()
        : this.layout().map((place) => ({ ...place, line: place.hunk.oldStart - 1, lines: place.hunk.oldLines }));
    const pending = places.filter((place) => place.state === "pending");
    return (pending.find((place) => line < place.line + Math.max(place.lines, 1)) ?? pending.at(-1))?.hunk.id;
  }

  /** The answer to `lspilot/reviewEdit` for the decisions so far (pending hunks count as rejected). */
  reply(feedback?: string): ReviewReply {
    const extra = feedback ? { feedback } : {};
    const edited = this.editedText;
    if (edited !== undefined && !sameLines(edited, this.proposedText())) {
      if (sameLines(edited, this.params.oldText)) return { decision: "reject", ...extra };
      return { decision: "accept", finalText: edited, ...extra };
    }
    const accepted = this.acceptedIds;
    if (this.hunks.length === 0 && this.acceptedWhole) return { decision: "accept", ...extra };
    if (accepted.length === 0) return { decision: "reject", ...extra };
    if (accepted.length === this.hunks.length) return { decision: "accept", ...extra };
    return { decision: "partial", acceptedHunkIds: accepted, ...extra };
  }

  private set(hunkId: string, state: HunkState): void {
    this.state(hunkId); // throws on an unknown id
    this.states.set(hunkId, state);
  }
}

/** The last part of a file URI's path, decoded. */
export function fileName(uri: string): string {
  const last = uri.split(/[?#]/)[0]!.split("/").pop() ?? uri;
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

/** The file a review is about, as the user reads it: "a.py", "a.py → b.py" (a move), "a.py (deletion)". */
export function reviewLabel(params: ReviewEditParams): string {
  const name = fileName(params.uri);
  if (params.newUri) return `${name} → ${fileName(params.newUri)}`;
  if (params.isDeletion) return `${name} (deletion)`;
  if (params.isNewFile) return `${name} (new)`;
  return name;
}

/**
 * The review diff's title. It holds no count of the reviews queued behind it: VS Code keeps the
 * title a diff was first opened with, so a count went stale as reviews came and went
 * ({@link queuedNote} says it where it can change).
 */
export function reviewTitle(params: ReviewEditParams): string {
  const name = fileName(params.uri);
  let what = `${name} (proposed)`;
  if (params.newUri) what = `${name} → ${fileName(params.newUri)} (proposed move)`;
  else if (params.isDeletion) what = `${name} (proposed deletion)`;
  else if (params.isNewFile) what = `${name} (proposed new file)`;
  return `lspilot: ${what}`;
}

/** What the review under way says of the reviews queued behind it (`next`: the first of them). */
export function queuedNote(waiting: number, next: ReviewEditParams): string {
  return `${waiting} more review${waiting === 1 ? "" : "s"} queued (next: ${reviewLabel(next)})`;
}

/** The name of the proposed side: where the file ends up (its new name for a move). */
export function proposedName(params: ReviewEditParams): string {
  return fileName(params.newUri ?? params.uri);
}

type Listener<T> = (value: T) => void;

class Emitter<T> {
  private listeners: Listener<T>[] = [];
  on(listener: Listener<T>): { dispose(): void } {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }
  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }
}

interface Pending {
  proposal: Proposal;
  answer: (reply: ReviewReply) => void;
}

/**
 * Proposals in arrival order. The first is the one under review ({@link current}); when it is
 * answered (or the daemon cancels it) the next one becomes current.
 */
export class ReviewQueue {
  private readonly pending: Pending[] = [];
  private readonly shown = new Emitter<Proposal | undefined>();
  private readonly changed = new Emitter<Proposal>();
  private readonly counted = new Emitter<number>();
  /** {@link waiting} as last announced. */
  private counting = 0;

  /** Fires with the proposal now under review (undefined: none left). */
  readonly onDidChangeCurrent = (listener: Listener<Proposal | undefined>) => this.shown.on(listener);
  /** Fires when a hunk of a proposal changed state. */
  readonly onDidChangeProposal = (listener: Listener<Proposal>) => this.changed.on(listener);
  /**
   * Fires with {@link waiting} when it changed: a review arrived behind the one under review, or
   * one was answered or cancelled (the one under review, or one waiting, out of order).
   */
  readonly onDidChangeWaiting = (listener: Listener<number>) => this.counted.on(listener);

  get current(): Proposal | undefined {
    return this.pending[0]?.proposal;
  }

  /** How many reviews wait behind the one under review. */
  get waiting(): number {
    return Math.max(this.pending.length - 1, 0);
  }

  /** A review is open (the editor's review keys and buttons apply). */
  get reviewing(): boolean {
    return this.pending.length > 0;
  }

  /**
   * What `lspilot.openReview` shows: the proposal asked for (else the current one), or why
   * there is none. A queued proposal asked for becomes the one under review (its diff gets the
   * Accept / Reject lenses and buttons; the one it displaces waits next in line). A review no
   * longer pending leaves the one under review as it is.
   */
  toOpen(proposalId?: string): { proposal: Proposal } | { message: string } {
    const proposal = proposalId === undefined ? this.current : this.get(proposalId);
    if (proposal) {
      if (proposal !== this.current) this.promote(proposal);
      return { proposal };
    }
    if (proposalId !== undefined) return { message: "that review is over (no longer pending)" };
    return { message: "nothing to review" };
  }

  get proposals(): Proposal[] {
    return this.pending.map((p) => p.proposal);
  }

  get(proposalId: string): Proposal | undefined {
    return this.pending.find((p) => p.proposal.id === proposalId)?.proposal;
  }

  /** Queue a `lspilot/reviewEdit`; resolves with the reply once the user has decided. */
  enqueue(params: ReviewEditParams, token?: CancellationLike): Promise<ReviewReply> {
    return new Promise<ReviewReply>((resolve) => {
      const proposal = new Proposal(params);
      const entry: Pending = { proposal, answer: resolve };
      this.pending.push(entry);
      token?.onCancellationRequested(() => this.finish(proposal.id, { decision: "cancelled" }));
      if (this.pending.length === 1) this.shown.fire(proposal);
      this.count();
    });
  }

  /**
   * Accept one hunk; answers the daemon when that was the last undecided hunk. `side` is the
   * proposed side's text as the editor holds it (the user may have edited it).
   */
  accept(proposalId: string, hunkId: string, side?: string): void {
    this.decide(proposalId, (p) => p.accept(hunkId, side));
  }

  reject(proposalId: string, hunkId: string, side?: string): void {
    this.decide(proposalId, (p) => p.reject(hunkId, side));
  }

  acceptAll(proposalId: string, side?: string): void {
    this.decide(proposalId, (p) => p.acceptAll(side));
  }

  rejectAll(proposalId: string, feedback?: string): void {
    this.decide(proposalId, (p) => p.rejectAll(), feedback);
  }

  /** Answer now with the decisions so far (undecided hunks are rejected). */
  submit(proposalId: string, feedback?: string, side?: string): void {
    const proposal = this.get(proposalId);
    proposal?.noteProposedSide(side);
    if (proposal) this.finish(proposalId, proposal.reply(feedback));
  }

  /** Stop reviewing everything (the connection went away or the user gave up). */
  cancelAll(): void {
    for (const { proposal } of [...this.pending]) this.finish(proposal.id, { decision: "cancelled" });
  }

  /** Put `proposal` first in line and show it. */
  private promote(proposal: Proposal): void {
    const index = this.pending.findIndex((p) => p.proposal === proposal);
    const [entry] = this.pending.splice(index, 1);
    this.pending.unshift(entry!);
    this.shown.fire(proposal);
  }

  private decide(proposalId: string, change: (proposal: Proposal) => void, feedback?: string): void {
    const proposal = this.get(proposalId);
    if (!proposal) throw new Error(`no proposal ${proposalId} under review`);
    change(proposal);
    this.changed.fire(proposal);
    if (proposal.decided) this.finish(proposalId, proposal.reply(feedback));
  }

  private finish(proposalId: string, reply: ReviewReply): void {
    const index = this.pending.findIndex((p) => p.proposal.id === proposalId);
    if (index < 0) return;
    const [entry] = this.pending.splice(index, 1);
    entry!.answer(reply);
    if (index === 0) this.shown.fire(this.current);
    this.count();
  }

  private count(): void {
    if (this.waiting === this.counting) return;
    this.counting = this.waiting;
    this.counted.fire(this.counting);
  }
}
