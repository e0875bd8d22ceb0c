// The scenario's YAML text is the single source of truth of the editor: the form reads values
// from it and writes each change back into the parsed Document (yaml's CST-preserving model), so
// comments, key order and formatting of everything else survive a form edit; the YAML view shows
// the same text. Nothing is re-serialized from a plain object.
import { Composer, CST, Document, isMap, isScalar, isSeq, Parser, parseDocument } from 'yaml';

const TO_STRING = { lineWidth: 100, flowCollectionPadding: false } as const;

export type Path = readonly (string | number)[];

export interface Parsed {
  doc: Document;
  /** the document as plain data (undefined when it has errors) */
  data: unknown;
  /** YAML syntax errors as `line N: reason` (the API's style) */
  errors: string[];
}

export function parseYaml(text: string): Parsed {
  const doc = parseDocument(text);
  const errors = doc.errors.map((e) => {
    const line = e.linePos?.[0].line;
    const msg = (e.message.split('\n')[0] ?? e.message).replace(/ at line \d+, column \d+:?$/, '');
    return line ? `line ${line}: ${msg}` : msg;
  });
  return { doc, data: errors.length ? undefined : (doc.toJS() as unknown), errors };
}

export function getIn(data: unknown, path: Path): unknown {
  let node = data;
  for (const k of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string | number, unknown>)[k];
  }
  return node;
}

/** The text through the concrete syntax tree and back: byte for byte the same. */
export function roundTrip(text: string): string {
  return Array.from(new Parser().parse(text), (t) => CST.stringify(t)).join('');
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function cstParse(text: string) {
  const tokens = Array.from(new Parser().parse(text));
  const doc = Array.from(new Composer({ keepSourceTokens: true }).compose(tokens))[0];
  if (!doc || doc.errors.length) throw new Error('fix the YAML syntax errors first');
  return { tokens, doc };
}

/** The value the Document model gives for an edit: what a CST edit must reproduce. */
function expected(text: string, edit: (d: Document) => void): { text: string; data: unknown } {
  const d = parseDocument(text);
  edit(d);
  return { text: d.toString(TO_STRING), data: d.toJS() };
}

/** Keeps a CST edit only if it parses to exactly what the Document model would give. */
function verified(next: string, want: { text: string; data: unknown }): string {
  const check = parseDocument(next);
  return !check.errors.length && sameValue(check.toJS(), want.data) ? next : want.text;
}

function indentLines(snippet: string, col: number): string {
  const pad = ' '.repeat(col);
  return pad + snippet.replace(/\n(?=.)/g, `\n${pad}`);
}

/** Appends `snippet` (a block map or sequence text) to a block collection token of the CST. */
function appendItems(coll: CST.BlockMap | CST.BlockSequence, snippet: string, col: number): boolean {
  if (!CST.stringify(coll).endsWith('\n')) return false;
  // a dummy first item, so that the indentation of the real ones is part of their own tokens
  const pad = ' '.repeat(col);
  const dummy = coll.type === 'block-map' ? `${pad}__dummy: 0\n` : `${pad}- 0\n`;
  const parsed = Array.from(new Parser().parse(dummy + snippet))[0];
  const value = parsed?.type === 'document' ? parsed.value : undefined;
  if (value?.type !== coll.type) return false;
  (coll.items as unknown[]).push(...value.items.slice(1));
  return true;
}

function columnOf(coll: CST.BlockMap | CST.BlockSequence): number | undefined {
  const first = coll.items[0];
  if (!first) return undefined;
  if (coll.type === 'block-map') {
    const key = (first as CST.BlockMap['items'][number]).key;
    return key && 'indent' in key ? key.indent : undefined;
  }
  return first.start.find((t) => t.type === 'seq-item-ind')?.indent;
}

function blockToken(node: unknown): CST.BlockMap | CST.BlockSequence | undefined {
  if (!(isMap(node) || isSeq(node))) return undefined;
  const t = node.srcToken;
  return t && (t.type === 'block-map' || t.type === 'block-seq') ? t : undefined;
}

/** Sets (or, for undefined, deletes) a value at a path and returns the new text.
 *
 * Edits are made in the concrete syntax tree whenever they can be, so the rest of the file stays
 * byte for byte as it was (comments, number spelling such as 5.0e6, flow maps): a scalar is
 * rewritten in place, a key of a block map or an item of a block sequence is removed or appended
 * as text. Each such edit is checked against what the Document model gives; where it cannot be
 * done (inside a flow map, a value that changes type) the Document model writes the file, which
 * keeps comments and order but may normalize spacing and number spelling. */
export function setInText(text: string, path: Path, value: unknown): string {
  const want = expected(text, (d) => {
    if (value === undefined) {
      if (d.hasIn(path)) d.deleteIn(path);
    } else d.setIn(path, value);
  });
  const { tokens, doc } = cstParse(text);
  const out = () => tokens.map((t) => CST.stringify(t)).join('');
  const node = doc.getIn(path, true);
  const last = path[path.length - 1];
  const parentPath = path.slice(0, -1);
  const parent = parentPath.length ? doc.getIn(parentPath, true) : doc.contents;

  if (value === undefined) {
    if (node === undefined) return text;
    const coll = blockToken(parent);
    if (!coll || last === undefined) return want.text;
    const idx = isSeq(parent)
      ? Number(last)
      : isMap(parent)
        ? parent.items.findIndex((p) => (isScalar(p.key) ? p.key.value : p.key) === last)
        : -1;
    if (idx < 0 || idx >= coll.items.length) return want.text;
    coll.items.splice(idx, 1);
    // the first item's indentation lives before the collection: the new first one has its own
    const first = coll.items[0];
    if (idx === 0 && first) {
      while (first.start[0]?.type === 'space') first.start.shift();
    }
    return verified(out(), want);
  }

  const scalarValue = typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean';
  if (scalarValue && isScalar(node) && node.srcToken && CST.isScalar(node.srcToken)) {
    CST.setScalarValue(node.srcToken, String(value));
    return verified(out(), want);
  }
  if (node === undefined) {
    // the deepest existing block map on the path gets the rest as one new key
    for (let k = path.length - 1; k >= 0; k--) {
      const at = k ? doc.getIn(path.slice(0, k), true) : doc.contents;
      if (at === undefined || at === null) continue;
      const coll = blockToken(at);
      if (coll?.type !== 'block-map') break;
      const col = columnOf(coll);
      if (col === undefined) break;
      let nested: unknown = value;
      for (let j = path.length - 1; j > k; j--) nested = { [String(path[j])]: nested };
      const snippet = indentLines(new Document({ [String(path[k])]: nested }).toString(TO_STRING), col);
      if (appendItems(coll, snippet, col)) return verified(out(), want);
      break;
    }
  }
  return want.text;
}

/** Appends an item to a sequence at a path. */
export function appendInText(text: string, path: Path, value: unknown): string {
  const want = expected(text, (d) => {
    const seq = d.getIn(path, true);
    if (isSeq(seq)) seq.add(d.createNode(value));
    else d.setIn(path, [value]);
  });
  const { tokens, doc } = cstParse(text);
  const coll = blockToken(doc.getIn(path, true));
  const col = coll?.type === 'block-seq' ? columnOf(coll) : undefined;
  if (coll && col !== undefined && appendItems(coll, indentLines(new Document([value]).toString(TO_STRING), col), col)) {
    return verified(tokens.map((t) => CST.stringify(t)).join(''), want);
  }
  return want.text;
}

export function removeInText(text: string, path: Path): string {
  return setInText(text, path, undefined);
}

/**
 * The form's three edits (FormCtx set, append and remove) on the YAML text that `update` holds:
 * `update` takes a change of the text (a React state setter, or the editor's edit()).
 */
export function textEdits(update: (change: (text: string) => string) => void) {
  return {
    set: (path: Path, value: unknown) => {
      update((t) => setInText(t, path, value));
    },
    append: (path: Path, value: unknown) => {
      update((t) => appendInText(t, path, value));
    },
    remove: (path: Path) => {
      update((t) => removeInText(t, path));
    },
  };
}

export function isMapAt(text: string, path: Path): boolean {
  return isMap(parseDocument(text).getIn(path, true));
}
