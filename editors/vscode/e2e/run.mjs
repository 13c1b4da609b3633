// End to end in a real VS Code (code-server, driven by headless Chromium): install lspilot.vsix
// and the test-only driver extension, open a workspace, let the driver ask, accept the first
// hunk and reject the second in the review diff, then check the open document, what the model
// was told, and that following the agent showed the file it read first. In a second turn the
// driver types into a.py and at once accepts its review: the accepted hunk lands around the typed
// line and the model hears that the user also edited a.py, not an editor failure from a stale
// version. In a third,
// the driver accepts and rejects with the cursor on the original side of the diff: the hunks at
// the cursor there must be the ones decided. In a fourth, it edits the proposal and cancels the
// turn: the review must close, its proposal be forgotten and a.py stay as it was. In a fifth, it
// rejects the whole file and cancels the turn while the feedback box is open: the rejection must
// end quietly once the box closes. Then it kills the daemon, switches following off and asks
// while vscode-languageclient restarts it: the ask must run in the restarted daemon, no second
// daemon start, and the restarted daemon must not follow. That turn proposes two changes at once and, while they are
// open, a turn of another session a third; answered out of order, the review diff must count the
// reviews queued behind it at each step. Then a window without a folder opens, where
// the driver asks: no daemon may serve it (the model must not hear it), and a prompt sent from the
// chat view there must come back into its box. Prints the outcome as
// JSON on the last line; exits non-zero on failure. Every wait (here and in the driver) has its
// own limit: a scenario that hangs fails within a minute, saying what it waited for.
//
// Needs CODE_SERVER (its bin/code-server) and CHROMIUM (a chromium binary): e2e/setup.sh DIR
// leaves both in DIR (scripts/dev test: .cache/vscode-e2e).
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const extension = path.resolve(here, "..");
const repo = path.resolve(extension, "..", "..");
const python = process.env.LSPILOT_PYTHON ?? path.join(repo, ".venv", "bin", "python");
const lspilot = process.env.LSPILOT_BIN ?? path.join(path.dirname(python), "lspilot");
const dataDir = process.env.LSPILOT_DATA_DIR ?? path.join(repo, ".cache", "lspilot-data");
const codeServer = process.env.CODE_SERVER;
const chromium = process.env.CHROMIUM;
if (!codeServer || !chromium) throw new Error("set CODE_SERVER and CHROMIUM (scripts/dev test sets them up: e2e/setup.sh)");

const TWO = "def area(r: float) -> float:\n    return 3.14 * r * r\n\n\ndef name() -> str:\n    return 'circle'\n";
const PROPOSAL = TWO.replace("3.14 * r * r", "undefined_pi * r * r").replace("'circle'", "'disc'");
// The third turn's proposal, on a.py as the second left it (the typed line, h1 of the first):
// h1 changes the typed line, h2 the name; the driver decides both from the original side.
const TYPED = "# mine\n" + TWO.replace("3.14 * r * r", "undefined_pi * r * r");
const THIRD = TYPED.replace("# mine", "# theirs").replace("'circle'", "'ring'");

/**
 * `promise`, or an error naming `what` after `seconds`: a scenario that regresses into a hang
 * fails here, with what it waited for, and the finally below still stops code-server and
 * Chromium (pytest's timeout would kill only this process, after minutes).
 */
function within(seconds, what, promise) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`waited ${seconds} s for ${what}`)), seconds * 1000);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** The frame of `page` (a webview's, nested) holding `selector`, once it is there. */
async function frameWith(page, selector, seconds) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    for (const frame of page.frames()) {
      // Looked up in the frame's document as it is now: frame.$ keeps the first document it saw,
      // and a webview writes its page over the one its frame loaded (asked before that, frame.$
      // failed on the old document for good). A frame may go meanwhile: puppeteer throws for a
      // detached frame, at once or later.
      const holds = () => frame.evaluate((wanted) => document.querySelector(wanted) !== null, selector);
      if (await Promise.resolve().then(holds).catch(() => false)) return frame;
    }
    await new Promise((resolve) => setTimeout(resolve, 200)); // look again: webviews load on their own
  }
  throw new Error(`waited ${seconds} s for a webview holding ${selector}`);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lspilot-e2e-"));
const children = [];
let browser;
try {
  const ws = path.join(dir, "ws");
  fs.mkdirSync(ws);
  fs.mkdirSync(path.join(dir, "home"));
  fs.writeFileSync(path.join(ws, "a.py"), TWO);
  fs.writeFileSync(path.join(ws, "b.py"), "one\ntwo\nthree\n");
  fs.writeFileSync(path.join(ws, "c.txt"), "c = 1\n");
  fs.writeFileSync(path.join(ws, "d.txt"), "d = 1\n");
  const script = path.join(dir, "script.json");
  fs.writeFileSync(script, JSON.stringify([
    { tool_calls: [["read", { filePath: "b.py", offset: 3 }]] },  // followed: b.py is shown at line 3
    { tool_calls: [["read", { filePath: "a.py" }]] },
    { tool_calls: [["write", { filePath: "a.py", content: PROPOSAL }]] },
    { text: "done" },
    { tool_calls: [["read", { filePath: "a.py" }]] },
    { tool_calls: [["edit", { filePath: "a.py", oldString: "'circle'", newString: "'round'" }]] },
    { text: "done again" },
    { tool_calls: [["read", { filePath: "a.py" }]] },
    { tool_calls: [["write", { filePath: "a.py", content: THIRD }]] },
    { text: "done thrice" },
    { tool_calls: [["read", { filePath: "a.py" }]] },
    { tool_calls: [["edit", { filePath: "a.py", oldString: "'ring'", newString: "'torus'" }]] },  // cancelled
    { tool_calls: [["read", { filePath: "a.py" }]] },
    { tool_calls: [["edit", { filePath: "a.py", oldString: "'ring'", newString: "'cone'" }]] },  // cancelled while rejecting
    // After the crash, with following switched off: two reviews at once, then, while they are
    // open, a third from the driver's other session; both turns end with the same text. Text
    // files: no language server (starting again in the restarted daemon) to wait for.
    { tool_calls: [["read", { filePath: "c.txt" }], ["read", { filePath: "d.txt" }]] },
    { tool_calls: [["read", { filePath: "b.py", offset: 2 }]] },  // not followed any more
    { tool_calls: [
      ["edit", { filePath: "c.txt", oldString: "c = 1", newString: "c = 2" }],
      ["edit", { filePath: "d.txt", oldString: "d = 1", newString: "d = 2" }],
    ] },
    { tool_calls: [["write", { filePath: "e.txt", content: "e = 1\n" }]] },  // the other session's
    { text: "back after the crash" },
    { text: "back after the crash" },
  ]));
  const model = spawn(python, ["-m", "daemon.scripted_model", script], { cwd: repo, stdio: ["pipe", "pipe", "inherit"] });
  children.push(model);
  const [first] = await once(model.stdout, "data");
  const apiBase = String(first).split("\n")[0].trim();

  // The extension host resolves the login shell's environment: settings carry what the daemon needs.
  const userData = path.join(dir, "ud");
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  fs.writeFileSync(path.join(userData, "User", "settings.json"), JSON.stringify({
    "lspilot.server.path": lspilot,
    "lspilot.server.env": {
      HOME: path.join(dir, "home"), LSPILOT_DATA_DIR: dataDir, LSPILOT_CONFIG_DIR: path.join(dir, "config"),
      LSPILOT_MODEL: "openai/scripted", LSPILOT_API_BASE: apiBase, OPENAI_API_KEY: "sk-fake",
    },
    "workbench.startupEditor": "none",
    "files.autoSave": "off", // VS Code's default (code-server saves after a delay): changes stay unsaved
    "lspilot.follow": true,
  }));
  const common = ["--user-data-dir", userData, "--extensions-dir", path.join(dir, "ext")];
  const driver = path.join(dir, "driver.vsix");
  const vsce = path.join(extension, "node_modules", ".bin", "vsce");
  const packaged = spawnSync(vsce, ["package", "--no-dependencies", "--allow-missing-repository", "--skip-license", "-o", driver], { cwd: path.join(here, "driver"), encoding: "utf8" });
  if (packaged.status !== 0) throw new Error(`driver package failed: ${packaged.stderr}`);
  for (const vsix of [path.join(extension, "lspilot.vsix"), driver]) {
    const installed = spawnSync(codeServer, [...common, "--install-extension", vsix], { encoding: "utf8" });
    if (installed.status !== 0 || !/successfully installed/.test(installed.stdout)) throw new Error(`install ${vsix}: ${installed.stdout}${installed.stderr}`);
  }
  const out = path.join(dir, "out.json");
  const server = spawn(codeServer, [...common, "--auth", "none", "--bind-addr", "127.0.0.1:0", "--disable-telemetry", "--disable-workspace-trust", ws], {
    env: { ...process.env, LSPILOT_E2E_OUT: out, TMPDIR: dir },  // its sockets go in dir, not /tmp
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(server);
  const url = await new Promise((resolve, reject) => {
    const seen = (data) => { const m = String(data).match(/HTTP server listening on (http:\/\/\S+)/); if (m) resolve(m[1]); };
    server.stdout.on("data", seen);
    server.stderr.on("data", seen);
    server.on("exit", (code) => reject(new Error(`code-server exited ${code}`)));
  });
  // What the driver writes to `file`; an error naming `what` when it wrote nothing in `seconds`.
  const writtenTo = (file, seconds, what) => {
    let watcher;
    const read = new Promise((resolve) => {
      watcher = fs.watch(dir, () => {
        if (!fs.existsSync(file)) return;
        watcher.close();
        try { resolve(JSON.parse(fs.readFileSync(file, "utf8"))); } catch (error) { resolve({ ok: false, error: String(error) }); }
      });
    });
    return within(seconds, what, read).finally(() => watcher.close());
  };
  // The driver bounds each of its steps; this bounds a driver that never ran (no activation).
  const written = writtenTo(out, 180, "the driver's result in the window with a folder");
  browser = await puppeteer.launch({ executablePath: chromium, headless: true, args: ["--no-sandbox", "--disable-gpu"], env: { ...process.env, TMPDIR: dir } });
  const page = await browser.newPage();
  await page.goto(`${url}?folder=${encodeURIComponent(ws)}`);
  // The chat view (each ask shows it) says why the cancelled turns' edits failed, for as long as
  // it shows their session: watched from the start (the driver's last turn runs in a new one).
  const mainChat = await frameWith(page, "#log", 180);
  const failedShown = mainChat.waitForFunction(() => document.getElementById("log").textContent.includes("Error: cancelled by the user."), { timeout: 0, polling: 100 });
  const showingWhy = within(180, "the chat view to show why a tool call failed", failedShown).then(() => true, () => false);
  const result = await written;
  const shownWhy = await showingWhy;
  // A window without a folder: the driver asks there. The daemon must not start (it would take
  // the directory it runs in for its workspace), so the model never hears that ask.
  const withoutFolder = writtenTo(out + ".empty", 60, "the driver's result in the window without a folder");
  const page2 = await browser.newPage();
  await page2.goto(`${url}?ew=true`);
  const empty = await withoutFolder;
  // There, a prompt sent from the chat view, which no turn takes, goes back into its box.
  const chat = await frameWith(page2, "#prompt", 60);
  await chat.type("#prompt", "kept prompt");
  await chat.click("#send");
  const restored = chat.waitForFunction(() => document.getElementById("prompt").value === "kept prompt", { timeout: 0 });
  await within(60, "the prompt sent from the chat view without a folder to come back into its box", restored);
  const state = await (await fetch(apiBase.replace(/\/v1$/, "") + "/requests")).json();
  // What the model was told last in its 4th request (the write's result) and its 7th (the edit's).
  const lastTold = (request) => request?.messages.filter((m) => m.role === "tool").at(-1)?.content ?? "";
  const told = lastTold(state.requests[3]);
  const toldAgain = lastTold(state.requests[6]);
  const heardAfterCrash = state.requests.some((r) => JSON.stringify(r.messages).includes("after the crash"));
  const expected = TWO.replace("3.14 * r * r", "undefined_pi * r * r");
  const followed = result.followed?.path.endsWith("/b.py") && result.followed.line === 2;
  const ok = result.ok && followed && result.text === expected && result.dirty === true && /rejected h2/.test(told)
    && result.typedText === "# mine\n" + expected.replace("'circle'", "'round'") && /also edited a\.py since the change was proposed/.test(toldAgain)
    && result.fromOriginal === TYPED.replace("'circle'", "'ring'") && result.cancelled === result.fromOriginal
    && heardAfterCrash && shownWhy;
  const heardWithoutFolder = state.requests.some((r) => JSON.stringify(r.messages).includes("asked without a folder"));
  const okWithoutFolder = empty.ok && !heardWithoutFolder;
  console.log(JSON.stringify({ ...result, ok: ok && okWithoutFolder, told, toldAgain, heardAfterCrash, shownWhy, empty, heardWithoutFolder }));
  process.exitCode = ok && okWithoutFolder ? 0 : 1;
} finally {
  await browser?.close();
  for (const child of children.reverse()) {
    if (child.exitCode === null) { child.stdin?.end(); child.kill(); await once(child, "exit"); }
  }
  fs.rmSync(dir, { recursive: true, force: true });
}
