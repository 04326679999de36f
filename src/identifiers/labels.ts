/**
 * How a header column is named wherever it is shown or recorded (messages, the printed mapping,
 * --json, rejects, the audit record, journals): a header cell may itself be personal data (the
 * first data row of a file without a header, a contact typed into the header row), so a cell
 * that looks like an identifier value is named by its position instead. The mapping computes each
 * column's label once (MappedColumn.label and the like); only finding a column reads its cell.
 */
import { normalizeDeviceId } from '../platform/identifiers/rules.js';

const HEX64_LIKE = /^[0-9a-f]{64}$/i;

/**
 * Whether a header cell looks like an identifier value (an email, a phone or id number, a
 * digest, a device id). In a file without a header row the "header" is the first data row, and
 * printing its cells as column names would put raw identifiers on stderr.
 */
export function looksLikeData(cell: string): boolean {
  if (cell.includes('@') || HEX64_LIKE.test(cell) || normalizeDeviceId(cell).ok) return true;
  let digits = 0;
  for (let i = 0; i < cell.length; i++) {
    const c = cell.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39 && ++digits >= 6) return true;
  }
  return false;
}

const PLACEHOLDER = /^<column \d+, looks like data>$/;

/** The label of header cell `cell` at position `index`: the cell, or a placeholder when it looks like data. */
export function headerLabel(cell: string, index: number): string {
  return looksLikeData(cell) ? `<column ${index + 1}, looks like data>` : cell;
}

/**
 * A value the user gave to name a column (`--map`, `--country-column`), as an error quotes it: in
 * quotes, or a placeholder when it looks like an identifier value (a data row pasted as a name).
 */
export function givenLabel(value: string, quoted = true): string {
  if (looksLikeData(value)) return '<the value given, looks like data>';
  return quoted ? JSON.stringify(value) : value;
}

/** Whether a label is a placeholder (its cell looked like data). */
export function isPlaceholder(label: string): boolean {
  return PLACEHOLDER.test(label);
}

/** A label as messages show it: a name quoted, a placeholder as it is. */
export function quoteLabel(label: string): string {
  return isPlaceholder(label) ? label : JSON.stringify(label);
}

/** A header column: its position, its cell (to find it by), and its label (to show or record it). */
export interface HeaderColumn {
  /** Position in the header. */
  index: number;
  /** The header cell: what finds the column (a `map` entry, a name), never shown or recorded. */
  column: string;
  /** What messages, --json, rejects, the audit record and journals name it by (headerLabel). */
  label: string;
}

/** Column `index` of `header`, with its label. */
export function headerColumn(header: readonly string[], index: number): HeaderColumn {
  const column = header[index] as string;
  return { index, column, label: headerLabel(column, index) };
}
