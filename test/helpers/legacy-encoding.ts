/**
 * Text to bytes in a legacy encoding (Windows-125x, Shift_JIS, EUC-JP, GBK, Big5, EUC-KR...), for
 * generating exports as spreadsheets write them. Node decodes these encodings but cannot encode
 * them: the table is built by decoding every one- and two-byte sequence once per encoding.
 */
const tables = new Map<string, Map<string, number[]>>();

function tableFor(encoding: string): Map<string, number[]> {
  let table = tables.get(encoding);
  if (table !== undefined) return table;
  table = new Map();
  const decoder = new TextDecoder(encoding, { fatal: true });
  const add = (bytes: number[]): void => {
    let text: string;
    try {
      text = decoder.decode(Uint8Array.from(bytes));
    } catch {
      return;
    }
    if ([...text].length === 1 && !table!.has(text)) table!.set(text, bytes);
  };
  for (let b = 0; b < 0x100; b++) add([b]);
  for (let lead = 0x81; lead < 0x100; lead++) for (let trail = 0x40; trail < 0x100; trail++) add([lead, trail]);
  tables.set(encoding, table);
  return table;
}

/** `text` encoded in `encoding`; throws on a character the encoding cannot represent. */
export function encodeLegacy(text: string, encoding: string): Buffer {
  const table = tableFor(encoding);
  const out: number[] = [];
  for (const c of text) {
    const bytes = table.get(c);
    if (bytes === undefined) throw new Error(`${JSON.stringify(c)} has no ${encoding} form`);
    out.push(...bytes);
  }
  return Buffer.from(out);
}
