/** A workspace of several folders against a real `lspilot serve`: the daemon serves the first. */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { answerPlaces, serverRoot } from "../src/core/navigation";
import { setUp } from "./harness";

const TIMEOUT = { timeout: 150_000 };

test("references asked from a file of a second folder are places in the daemon's folder", TIMEOUT, async () => {
  // A monorepo opened as its root plus one package as a second folder: the daemon serves the root.
  const t = await setUp({ "a.py": "def area(r):\n    return 3.14 * r * r\n" }, []);
  try {
    const pkg = path.join(t.ws, "pkg");
    mkdirSync(pkg);
    const use = path.join(pkg, "use.py");
    writeFileSync(use, "from a import area\n\nn = area(1)\n");
    const uri = await t.daemon.open(use);
    const answer = await t.daemon.client.navigate({ operation: "findReferences", uri, position: { line: 2, character: 4 } });
    assert.deepEqual((answer.locations ?? []).map((l) => l.path).sort(), ["a.py", "pkg/use.py", "pkg/use.py"]);
    const files = answerPlaces(serverRoot([t.ws, pkg], "/nowhere"), answer).map((place) => place.file);
    assert.deepEqual([...new Set(files)].sort(), [path.join(t.ws, "a.py"), use]);
    for (const file of files) assert.ok(existsSync(file), file);
    assert.equal(serverRoot(undefined, "/cwd"), "/cwd"); // no folder open: where the daemon runs
  } finally {
    await t.close();
  }
});
