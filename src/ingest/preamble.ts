/**
 * The delimiter and the header record of a CSV sample, when the header may come after notes: an
 * export's first lines can be a title (`Contacts`), a line saying where and when it was made
 * (`Exported from X on 2026-11-01`) and blank lines.
 *
 * The data rows show the layout: with each candidate delimiter, the first records are parsed and
 * the field count most of them share (at least 2) is the file's; the delimiter is the one most
 * records agree on. The header is the first record with that count and two cells filled (a note a
 * spreadsheet padded with delimiters to the file's width has one). Lines before it are skipped
 * as a preamble only with evidence that they are not the header nor data: the header found has no
 * cell that looks like a value, and either has a known column name or follows lines that are all
 * blank or single cells (notes, titles). Otherwise the first line is the header, as it always is
 * without a preamble, and a misshapen file is reported as such.
 */
import Papa from 'papaparse';
import { isKnownColumnName } from '../identifiers/mapping.js';
import { looksLikeData } from '../identifiers/labels.js';

export type CsvDelimiter = ',' | ';' | '\t' | '|';
export const CSV_DELIMITERS: readonly CsvDelimiter[] = [',', ';', '\t', '|'];

/** Records read to find the layout: the preamble is among them (a longer one is not looked for). */
const LAYOUT_RECORDS = 60;
/** The most records skipped as a preamble. */
export const MAX_PREAMBLE_RECORDS = 30;

export interface CsvLayout {
  delimiter: CsvDelimiter;
  /** Index of the header among the sample's records (0: no preamble). */
  headerRecord: number;
}

interface Candidate {
  delimiter: CsvDelimiter;
  records: string[][];
  /** The field count most records with 2 or more fields have. */
  columns: number;
  /** How many records have it. */
  support: number;
}

/** `text`: the sample's whole lines. `forced`: the delimiter given by the caller. */
export function findLayout(text: string, forced: CsvDelimiter | undefined): CsvLayout {
  let best: Candidate | undefined;
  for (const delimiter of forced === undefined ? CSV_DELIMITERS : [forced]) {
    const records = Papa.parse<string[]>(text, {
      delimiter,
      newline: '\n',
      preview: LAYOUT_RECORDS,
      quoteChar: '"',
    }).data;
    const { columns, support } = modalCount(records);
    if (columns < 2) continue;
    if (best === undefined || support > best.support || (support === best.support && columns > best.columns)) {
      best = { delimiter, records, columns, support };
    }
  }
  if (best === undefined) return { delimiter: forced ?? ',', headerRecord: 0 };
  return { delimiter: best.delimiter, headerRecord: headerRecord(best) };
}

function modalCount(records: readonly string[][]): { columns: number; support: number } {
  const counts = new Map<number, number>();
  for (const r of records) if (r.length >= 2) counts.set(r.length, (counts.get(r.length) ?? 0) + 1);
  let columns = 0;
  let support = 0;
  for (const [n, c] of counts) {
    if (c > support || (c === support && n > columns)) [columns, support] = [n, c];
  }
  return { columns, support };
}

/** The header's record index: the first with the file's field count, when the lines above are a preamble. */
function headerRecord({ records, columns }: Candidate): number {
  // A note a spreadsheet padded to the file's width (`Exported on 2026-11-01;;;;`) has one cell filled.
  const at = records.findIndex((r) => r.length === columns && nonEmpty(r) >= 2);
  if (at <= 0 || at > MAX_PREAMBLE_RECORDS) return 0;
  const header = records[at] as string[];
  if (header.some((cell) => looksLikeData(cell.trim()))) return 0;
  const named = header.some((cell) => isKnownColumnName(cell.trim()));
  const above = records.slice(0, at);
  // A line above with several cells, one a column name, may be the header itself, misshapen.
  if (above.some((r) => nonEmpty(r) >= 2 && r.some((cell) => isKnownColumnName(cell.trim())))) return 0;
  return named || above.every((r) => nonEmpty(r) <= 1) ? at : 0;
}

function nonEmpty(record: readonly string[]): number {
  return record.filter((cell) => cell.trim() !== '').length;
}
