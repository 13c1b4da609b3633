// Test-only: drives the installed lspilot extension through its public commands, like a user,
// when LSPILOT_E2E_OUT is set. Opens a.py, asks, notes where following the agent showed b.py,
// accepts the first hunk and rejects the second in the review diff; asks again, types a line into
// a.py while its next review is open and at once accepts that review's hunk; asks a third time
// and decides that review's hunks with the cursor on the original side of its diff; asks a fourth
// time, edits the proposal and cancels the turn; asks a fifth time, rejects the whole file and
// cancels the turn while the feedback box is open; kills the daemon, switches following off and
// asks while it restarts (the restarted daemon must not follow), answers that turn's two reviews and a third from
// another session out of order, checking what the review diff says of the reviews queued behind
// it; then writes what happened to $LSPILOT_E2E_OUT.
const fs = require("node:fs");
const vscode = require("vscode");

/** The proposed sides of the reviews {@link untilReview} found so far. */
const reviewed = new Set();

function proposalEditor() {
  return vscode.window.visibleTextEditors.find((e) => e.document.uri.scheme === "lspilot-proposal" && !reviewed.has(e.document.uri.path));
}

/**
 * The next review diff's proposed side once it is shown: never one found before (VS Code may
 * still list the editor of a review just answered as visible).
 */
function untilReview() {
  return new Promise((resolve) => {
    const found = (editor) => {
      reviewed.add(editor.document.uri.path);
      resolve(editor);
    };
    const shown = proposalEditor();
    if (shown) return found(shown);
    const sub = vscode.window.onDidChangeVisibleTextEditors(() => {
      const editor = proposalEditor();
      if (!editor) return;
      sub.dispose();
      found(editor);
    });
  });
}

/**
 * The `lspilot serve` processes of this extension host (the lspilot extension runs here too),
 * from /proc: a daemon's parent is the extension host, its arguments end in "serve".
 */
function daemons() {
  const pids = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const args = fs.readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").filter(Boolean);
      if (parent === process.pid && args.at(-1) === "serve") pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * Resolves once `predicate` (maybe async) holds, looked at every 50 ms (a process gives no event
 * here, nor a CodeLens that changed); rejects with its error once it throws (left unhandled, the
 * error stopped the looking, and the step waited out its limit for nothing).
 */
function until(predicate) {
  return new Promise((resolve, reject) => {
    const look = async () => ((await predicate()) ? resolve() : setTimeout(() => look().catch(reject), 50));
    look().catch(reject);
  });
}

/** Resolves once no review diff is open. */
function untilNoReview() {
  const open = () =>
    vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .some((tab) => tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.scheme === "lspilot-proposal");
  return new Promise((resolve) => {
    if (!open()) return resolve();
    const sub = vscode.window.tabGroups.onDidChangeTabs(() => {
      if (open()) return;
      sub.dispose();
      resolve();
    });
  });
}

/**
 * Each review diff's tab: its title, then what the CodeLens above its proposed side's first line
 * says of the reviews queued behind it, if it says anything ("lspilot: a.py (proposed) / 1 more
 * review queued (next: b.py)").
 */
async function reviewTabs() {
  const tabs = vscode.window.tabGroups.all
    .flatMap((group) => group.tabs)
    .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.scheme === "lspilot-proposal");
  const shown = [];
  for (const tab of tabs) {
    // A diff's tab comes before its documents are loaded, and the CodeLenses of a document not
    // loaded are an "Illegal argument": load it first.
    await vscode.workspace.openTextDocument(tab.input.modified);
    const lenses = await vscode.commands.executeCommand("vscode.executeCodeLensProvider", tab.input.modified);
    const note = lenses.map((lens) => lens.command?.title ?? "").find((title) => title.includes(" queued "));
    shown.push(note ? `${tab.label} / ${note.replace("$(layers) ", "")}` : tab.label);
  }
  return shown;
}

/**
 * The turn after the crash proposes changes to c.txt and d.txt at once; while they are open a
 * turn of another session proposes e.txt. They are answered out of order (the one queued first,
 * then the one shown, then e.txt); at each step the review diff must say how many reviews are
 * queued behind it (its title, which VS Code never changes, must not). `files`: c.txt's and
 * d.txt's URIs.
 * Returns what the review tabs showed at each step.
 */
async function queuedReviews(crashed, files) {
  const seen = [];
  const expect = (what, wanted) => {
    let tabs = [];
    const shows = async () => wanted((tabs = await reviewTabs()));
    return within(what, until(shows)).then(
      () => seen.push(...tabs),
      (error) => {
        throw new Error(`${error.message}; the review tabs showed ${JSON.stringify(tabs)}`);
      },
    );
  };
  const note = (name, queued, next) =>
    `lspilot: ${name} (proposed) / ${queued} more review${queued === 1 ? "" : "s"} queued (next: ${next})`;
  const only = (wanted) => (tabs) => tabs.length === 1 && tabs[0] === wanted;
  let shown;
  await expect("c.txt's and d.txt's reviews, one queued behind the other", (tabs) => {
    shown = ["c.txt", "d.txt"].find((name) => only(note(name, 1, name === "c.txt" ? "d.txt" : "c.txt"))(tabs));
    return shown !== undefined;
  });
  const queued = shown === "c.txt" ? "d.txt" : "c.txt";
  await vscode.commands.executeCommand("lspilot.newSession");
  const another = vscode.commands.executeCommand("lspilot.ask", { prompt: "and a new file" });
  await expect("e.txt's review, queued while one is open, counted", only(note(shown, 2, queued)));
  await vscode.commands.executeCommand("lspilot.acceptAll", files[queued]);
  await expect(`one review fewer counted once ${queued}'s was accepted`, only(note(shown, 1, "e.txt (new)")));
  await vscode.commands.executeCommand("lspilot.acceptAll", files[shown]);
  await expect("e.txt's review, the last one", only("lspilot: e.txt (proposed new file)"));
  await vscode.commands.executeCommand("lspilot.acceptAll");
  await within("the turn after the crash to end", crashed);
  await within("the other session's turn to end", another);
  return seen;
}

/** The longest one step may take: a step that hangs fails the run with `what` it waited for. */
const STEP_SECONDS = 60;

/** `promise`, or an error naming `what` once it took longer than STEP_SECONDS. */
function within(what, promise) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`waited ${STEP_SECONDS} s for ${what}`)), STEP_SECONDS * 1000);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// Written whole, then renamed: the watcher never sees half a file.
function report(out, result) {
  fs.writeFileSync(out + ".part", JSON.stringify(result));
  fs.renameSync(out + ".part", out);
}

async function drive(out) {
  const steps = [];
  try {
    const folder = vscode.workspace.workspaceFolders[0].uri;
    const document = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(folder, "a.py"));
    await vscode.window.showTextDocument(document);
    steps.push("opened a.py");
    // b.py's editor once following shows it, and its cursor (the selection may come just after).
    let followed;
    const isB = (editor) => editor.document.uri.path.endsWith("/b.py");
    const following = [
      vscode.window.onDidChangeVisibleTextEditors((editors) => {
        const shown = editors.find(isB);
        if (shown && !followed) followed = { path: shown.document.uri.path, line: shown.selection.active.line };
      }),
      vscode.window.onDidChangeTextEditorSelection((event) => {
        if (followed && isB(event.textEditor)) followed.line = event.selections[0].active.line;
      }),
    ];
    const asking = vscode.commands.executeCommand("lspilot.ask", { prompt: "rename things" });
    const editor = await within("the first review", untilReview());
    steps.push(`review shown: ${editor.document.uri.path}`);
    await vscode.window.showTextDocument(editor.document, { viewColumn: editor.viewColumn });
    await vscode.commands.executeCommand("lspilot.acceptHunk");
    await vscode.commands.executeCommand("lspilot.rejectHunk");
    steps.push("accepted h1, rejected h2");
    await within("the first turn to end", asking);
    for (const listener of following) listener.dispose();
    steps.push("turn ended");
    const text = document.getText();
    // The user types in the file under review and accepts at once: vscode-languageclient holds
    // that didChange back (up to 250 ms), and the daemon must judge the accept on the new text.
    const again = vscode.commands.executeCommand("lspilot.ask", { prompt: "once more" });
    const second = await within("the second review", untilReview());
    steps.push(`second review shown: ${second.document.uri.path}`);
    await vscode.window.showTextDocument(second.document, { viewColumn: second.viewColumn });
    const typed = new vscode.WorkspaceEdit();
    typed.insert(document.uri, new vscode.Position(0, 0), "# mine\n");
    if (!(await vscode.workspace.applyEdit(typed))) throw new Error("could not type into a.py");
    await vscode.commands.executeCommand("lspilot.acceptHunk");
    steps.push("typed into a.py, accepted h1");
    await within("the second turn to end", again);
    steps.push("second turn ended");
    const typedText = document.getText();
    // The keys act on the hunk at the cursor on either side of the diff: on the original side
    // (the file itself), accept the second hunk, then reject the first.
    const thrice = vscode.commands.executeCommand("lspilot.ask", { prompt: "and once more" });
    const third = await within("the third review", untilReview());
    steps.push(`third review shown: ${third.document.uri.path}`);
    const isOriginal = (editor) => editor?.document.uri.toString() === document.uri.toString();
    const focused = isOriginal(vscode.window.activeTextEditor)
      ? Promise.resolve(vscode.window.activeTextEditor)
      : new Promise((resolve) => {
          const sub = vscode.window.onDidChangeActiveTextEditor((editor) => {
            if (!isOriginal(editor)) return;
            sub.dispose();
            resolve(editor);
          });
        });
    await vscode.commands.executeCommand("workbench.action.compareEditor.focusSecondarySide");
    const original = await within("the original side of the diff to take the focus", focused);
    steps.push(`original side focused in: ${vscode.window.tabGroups.activeTabGroup.activeTab?.label}`);
    const at = async (line, command) => {
      original.selection = new vscode.Selection(line, 0, line, 0);
      await vscode.commands.executeCommand(command);
    };
    await at(6, "lspilot.acceptHunk"); // return 'circle'
    await at(0, "lspilot.rejectHunk"); // # mine
    steps.push("on the original side: accepted the hunk at line 7, rejected the one at line 1");
    await within("the third turn to end", thrice);
    steps.push("third turn ended");
    const fromOriginal = document.getText();
    // The user edits the proposed side of the fourth review, then cancels the turn: the review
    // closes (left to itself, VS Code held the dirty diff open behind a "save changes?" prompt).
    const fourth = vscode.commands.executeCommand("lspilot.ask", { prompt: "one last time" });
    const last = await within("the fourth review", untilReview());
    const mine = new vscode.WorkspaceEdit();
    mine.insert(last.document.uri, new vscode.Position(0, 0), "# my idea\n");
    if (!(await vscode.workspace.applyEdit(mine))) throw new Error("could not edit the proposal");
    await vscode.commands.executeCommand("lspilot.cancel");
    await within("the cancelled fourth turn to end", fourth);
    await within("the cancelled review to close", untilNoReview());
    steps.push("edited the fourth proposal, cancelled: its review closed");
    // Its in-memory proposal went with it (they were kept for as long as the window lived).
    const kept = await vscode.workspace.fs.stat(last.document.uri).then(() => true, () => false);
    if (kept) throw new Error(`the cancelled review's proposal is still kept: ${last.document.uri}`);
    // A fifth review ends (its turn is cancelled) while "Reject the whole file" asks for feedback:
    // once the box is closed the command ends quietly (it failed: no proposal under review).
    const fifth = vscode.commands.executeCommand("lspilot.ask", { prompt: "try again" });
    await within("the fifth review", untilReview());
    const rejecting = vscode.commands.executeCommand("lspilot.rejectAll");
    await vscode.commands.executeCommand("lspilot.cancel");
    await within("the cancelled fifth turn to end", fifth);
    await within("the fifth review to close", untilNoReview());
    await vscode.commands.executeCommand("workbench.action.closeQuickOpen");
    await within("the rejection to end once its feedback box closed", rejecting);
    steps.push("cancelled the fifth turn while its rejection asked for feedback: the rejection ended quietly");
    // The daemon crashes, and the user switches following off while vscode-languageclient
    // restarts it (a Python process: it starts long after). An ask meanwhile waits for that
    // daemon (it started a second client and daemon, both answering), which must not follow the
    // agent (it was given the settings of the first start, following on).
    // followedAfterCrash: b.py shown at line 2, where the agent reads it after the crash; a
    // following daemon shows that place before it sends its next review (it waits for that).
    let followedAfterCrash = false;
    const watchingB = [
      vscode.window.onDidChangeVisibleTextEditors((editors) => {
        followedAfterCrash ||= editors.some((e) => isB(e) && e.selection.active.line === 1);
      }),
      vscode.window.onDidChangeTextEditorSelection((event) => {
        followedAfterCrash ||= isB(event.textEditor) && event.selections[0].active.line === 1;
      }),
    ];
    const before = daemons();
    if (before.length !== 1) throw new Error(`${before.length} daemons ran before the crash: ${before}`);
    process.kill(before[0], "SIGKILL");
    await vscode.workspace.getConfiguration("lspilot").update("follow", false, vscode.ConfigurationTarget.Global);
    await within("the crashed daemon's restart", until(() => daemons().some((pid) => pid !== before[0])));
    const files = Object.fromEntries(["c.txt", "d.txt"].map((name) => [name, vscode.Uri.joinPath(folder, name)]));
    for (const uri of Object.values(files)) await vscode.workspace.openTextDocument(uri); // the reviews' left sides
    const crashed = vscode.commands.executeCommand("lspilot.ask", { prompt: "after the crash" });
    const shown = await queuedReviews(crashed, files);
    steps.push(`the daemon crashed; an ask while it restarted ran in the restarted one; its reviews: ${shown.join(" | ")}`);
    for (const listener of watchingB) listener.dispose();
    if (followedAfterCrash) throw new Error("the restarted daemon followed the agent: following was switched off before it started");
    const after = daemons();
    if (after.length !== 1) throw new Error(`${after.length} daemons run after the crash: ${after}`);
    report(out, { ok: true, steps, followed, text, dirty: document.isDirty, typedText, fromOriginal, cancelled: document.getText() });
  } catch (error) {
    report(out, { ok: false, steps, error: String((error && error.stack) || error) });
  }
}

/**
 * In a window without a folder: ask, open the chat view (e2e/run.mjs sends a prompt there), and
 * write that the ask came back to $LSPILOT_E2E_OUT.empty.
 */
async function driveWithoutFolder(out) {
  try {
    await within("the ask without a folder to come back", vscode.commands.executeCommand("lspilot.ask", { prompt: "asked without a folder" }));
    await vscode.commands.executeCommand("lspilot.chat.focus");
    report(out, { ok: true });
  } catch (error) {
    report(out, { ok: false, error: String((error && error.stack) || error) });
  }
}

exports.activate = () => {
  const out = process.env.LSPILOT_E2E_OUT;
  if (out && !vscode.workspace.workspaceFolders) void driveWithoutFolder(out + ".empty");
  else if (out) void drive(out);
};
