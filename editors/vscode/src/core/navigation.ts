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

/**
 * The folder an answer's relative paths are relative to: the daemon's workspace, which is the
 * first workspace folder (else, with no folder open, the working directory it inherited) —
 * not the folder of the file the cursor is in, which is another one in a multi-root workspace
 * or none for a file outside them.
 */
export function serverRoot(folders: readonly string[] | undefined, cwd: string): string {
  return folders?.[0] ?? cwd;
}

/** The lines of a file (as LSP splits them), when the caller has them: columns need them. */
export type LinesOf = (file: string) => string[] | undefined;

/**
 * A 0-based column in characters (code points: the daemon's unit) as UTF-16 code units (VS
 * Code's and LSP's unit); they differ after characters outside the BMP, such as emoji.
 */
export function utf16Column(line: string | undefined, character: number): number {
  if (line === undefined) return character;
  let units = 0;
  let seen = 0;
  for (const char of line) {
    if (seen === character) return units;
    units += char.length;
    seen += 1;
  }
  return units + (character - seen); // past the end: as far past it as given
}

function toPlace(root: string, loc: Omit<NavLocation, "path">, file: string, linesOf: LinesOf, label?: string): Place {
  const absolute = path.isAbsolute(file) ? file : path.join(root, file);
  const lines = linesOf(absolute);
  const position = (line: number, character: number) => ({
    line: line - 1,
    character: utf16Column(lines?.[line - 1], Math.max(0, character - 1)),
  });
  const start = position(loc.line, loc.character);
  const end =
    loc.endLine !== undefined && loc.endCharacter !== undefined ? position(loc.endLine, loc.endCharacter) : start;
  return { file: absolute, range: { start, end }, ...(label ? { label } : {}) };
}

/** The absolute path of every file an answer names (to read their lines for `answerPlaces`). */
export function answerFiles(root: string, answer: NavigateAnswer): string[] {
  const files = [
    ...(answer.locations ?? []).map((loc) => loc.path),
    ...(answer.calls ?? []).flatMap((call) => [call.path, ...(call.fromPath ? [call.fromPath] : [])]),
  ];
  return [...new Set(files.map((file) => (path.isAbsolute(file) ? file : path.join(root, file))))];
}

/**
 * Every place an answer names: locations, or for calls each call site (else the caller itself).
 * Columns are converted with the files' lines from `linesOf`; a file without them keeps its
 * columns as they are (right for every line without characters outside the BMP).
 */
export function answerPlaces(root: string, answer: NavigateAnswer, linesOf: LinesOf = () => undefined): Place[] {
  const places = (answer.locations ?? []).map((loc) => toPlace(root, loc, loc.path, linesOf));
  for (const call of answer.calls ?? []) {
    const sites = call.fromRanges ?? [];
    if (sites.length && call.fromPath) {
      for (const site of sites) places.push(toPlace(root, site, call.fromPath, linesOf, call.name));
    } else {
      places.push(toPlace(root, call, call.path, linesOf, call.name));
    }
  }
  return places;
}
