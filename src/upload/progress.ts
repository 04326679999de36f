/**
 * Progress output for uploads on stderr: a line redrawn in place on a terminal, plain lines
 * at an interval otherwise. Only counts and rates: never identifiers.
 */
import type { UploadProgress } from './types.js';

export interface ProgressPrinterOptions {
  write: (text: string) => void;
  /** Redraw one line (terminal) or print plain lines. */
  tty: boolean;
  /** Plain mode: seconds between lines (default 10). */
  intervalMs?: number;
  /** Terminal mode: the terminal's width (default: stderr's, else 120). */
  columns?: () => number;
  now?: () => number;
}

const n = (x: number): string => x.toLocaleString('en-US');

/** `m:ss`, or `XhYYm` from an hour on. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : `${m}:${String(sec).padStart(2, '0')}`;
}

/** One part of a progress line; the highest `drop` goes first when the line is too wide. */
export interface ProgressPart {
  text: string;
  drop: number;
}

const SEPARATOR = ' · ';

/**
 * The parts that fit in `columns` (one left free for the cursor), in their order: whole parts
 * are left out, most droppable first, rather than the line being cut; only a first part wider
 * than the terminal is cut, with an ellipsis.
 */
export function fitProgressLine(parts: readonly ProgressPart[], columns: number): string {
  const width = Math.max(10, columns - 1);
  const kept = [...parts];
  const line = (): string => kept.map((p) => p.text).join(SEPARATOR);
  while (kept.length > 1 && line().length > width) {
    const worst = kept.reduce((w, p, i) => (p.drop > (kept[w] as ProgressPart).drop ? i : w), 0);
    kept.splice(worst, 1);
  }
  const text = line();
  return text.length > width ? `${text.slice(0, width - 1)}…` : text;
}

/** `45% ETA 0:12` from bytes read of a known total, or undefined. */
export function percentAndEta(
  read: number | undefined,
  total: number | undefined,
  elapsedMs: number,
  done: boolean,
): string | undefined {
  if (read === undefined || total === undefined || total <= 0) return undefined;
  const fraction = Math.min(1, read / total);
  const eta = fraction > 0 && !done ? (elapsedMs / fraction) * (1 - fraction) : 0;
  return `${Math.floor(fraction * 100)}%${done ? '' : ` ETA ${formatDuration(eta)}`}`;
}

/** The parts of an upload's progress line, in display order. */
export function uploadProgressParts(p: UploadProgress): ProgressPart[] {
  const seconds = p.elapsedMs / 1000;
  const rate = seconds > 0 ? Math.round(p.rows / seconds) : 0;
  const parts: ProgressPart[] = [
    { text: `rows ${n(p.rows)}`, drop: 0 },
    { text: `users ${n(p.users)}`, drop: 1 },
    {
      text: `requests ${n(p.batchesConfirmed + p.batchesSkipped)} confirmed${p.batchesFailed > 0 ? `, ${n(p.batchesFailed)} failed` : ''}${p.inFlight > 0 ? `, ${p.inFlight} in flight` : ''}`,
      drop: 2,
    },
    { text: `${n(rate)} rows/s`, drop: 4 },
    { text: `rate-limit waits ${n(p.rateLimitWaits)}`, drop: 7 },
  ];
  if (p.retries > 0) parts.push({ text: `retries ${n(p.retries)}`, drop: 6 });
  if (p.waitedMs >= 1000) parts.push({ text: `waited ${formatDuration(p.waitedMs)}`, drop: 5 });
  const eta = percentAndEta(p.inputBytesRead, p.inputTotalBytes, p.elapsedMs, p.done);
  if (eta !== undefined) parts.push({ text: eta, drop: 3 });
  parts.push({ text: `elapsed ${formatDuration(p.elapsedMs)}`, drop: 8 });
  return parts;
}

/** One line describing the upload so far (every part). */
export function formatUploadProgress(p: UploadProgress): string {
  return uploadProgressParts(p)
    .map((part) => part.text)
    .join(SEPARATOR);
}

/** Feeds on UploadProgress callbacks; call `finish()` before printing anything else. */
export class ProgressPrinter {
  private last = Number.NEGATIVE_INFINITY;
  private drawn = false;
  private readonly now: () => number;

  constructor(private readonly o: ProgressPrinterOptions) {
    this.now = o.now ?? Date.now;
  }

  update = (p: UploadProgress): void => {
    if (this.o.tty) {
      const columns = this.o.columns?.() ?? process.stderr.columns ?? 120;
      this.o.write(`\r\x1b[2K${fitProgressLine(uploadProgressParts(p), columns)}`);
      this.drawn = true;
      return;
    }
    const line = formatUploadProgress(p);
    const t = this.now();
    if (!p.done && t - this.last < (this.o.intervalMs ?? 10_000)) return;
    this.last = t;
    this.o.write(`progress: ${line}\n`);
  };

  finish(): void {
    if (this.o.tty && this.drawn) this.o.write('\n');
    this.drawn = false;
  }
}
