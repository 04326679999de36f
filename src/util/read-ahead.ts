/** Reading the first items of a stream before handing the whole stream on. */

export interface ReadAhead<T> {
  /** The items read ahead. */
  head: T[];
  /** The source ended while they were read. */
  ended: boolean;
  /** Every item, the head first; the source is closed when the iteration stops early. Iterate once. */
  all: () => AsyncGenerator<T>;
}

/** Reads `items` ahead while `more(head)` says so (or until they end). */
export async function readAhead<T>(
  items: AsyncIterable<T> | Iterable<T>,
  more: (head: readonly T[]) => boolean,
): Promise<ReadAhead<T>> {
  const it = Symbol.asyncIterator in items ? items[Symbol.asyncIterator]() : items[Symbol.iterator]();
  const head: T[] = [];
  let ended = false;
  while (more(head)) {
    const next = await it.next();
    if (next.done === true) {
      ended = true;
      break;
    }
    head.push(next.value);
  }
  async function* all(): AsyncGenerator<T> {
    let finished = ended;
    try {
      yield* head.splice(0);
      while (!finished) {
        const next = await it.next();
        if (next.done === true) finished = true;
        else yield next.value;
      }
    } finally {
      if (!finished) await it.return?.();
    }
  }
  return { head, ended, all };
}
