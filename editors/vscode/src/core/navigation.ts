/**
 * Navigation answers (`lspilot.navigate`) as plain locations the editor can show: absolute file
 * paths with 0-based ranges. src/navigation.ts turns them into VS Code `Location`s.
 */
import * as path from "node:path";
import type { NavigateAnswer, NavLocation, NavigateOperation, Range } from "./protocol";

export interface Place {
  file: string;
  range: Range;
  label?: string;
}

/** The editor commands and the daemon operation each runs. */
export const NAVIGATIONS: Record<string, NavigateOperation> = {
  findReferences: "findReferences",
  goToImplementation: "goToImplementation",
  showCallers: "incomingCalls",
};

function toPlace(root: string, loc: Omit<NavLocation, "path">, file: string, label?: string): Place {
  const start = { line: loc.line - 1, character: Math.max(0, loc.character - 1) };
  const end =
    loc.endLine !== undefined && loc.endCharacter !== undefined
      ? { line: loc.endLine - 1, character: Math.max(0, loc.endCharacter - 1) }
      : start;
  return { file: path.isAbsolute(file) ? file : path.join(root, file), range: { start, end }, ...(label ? { label } : {}) };
}

/** Every place an answer names: locations, or for calls each call site (else the caller itself). */
export function answerPlaces(root: string, answer: NavigateAnswer): Place[] {
  const places = (answer.locations ?? []).map((loc) => toPlace(root, loc, loc.path));
  for (const call of answer.calls ?? []) {
    const sites = call.fromRanges ?? [];
    if (sites.length && call.fromPath) {
      for (const site of sites) places.push(toPlace(root, site, call.fromPath, call.name));
    } else {
      places.push(toPlace(root, call, call.path, call.name));
    }
  }
  return places;
}
