/**
 * A memo of a pure function of a string key, for per-value hot paths: every answer is kept (the
 * keys are few: countries, calling codes) and the last one is at hand without a lookup, since
 * rows of one country follow each other and one value asks several times.
 */
export function memoByKey<V>(compute: (key: string) => V): (key: string) => V {
  const answers = new Map<string, V>();
  let lastKey: string | undefined;
  let last = undefined as V;
  return (key) => {
    if (key === lastKey) return last;
    let answer = answers.get(key);
    if (answer === undefined && !answers.has(key)) {
      answer = compute(key);
      answers.set(key, answer);
    }
    lastKey = key;
    last = answer as V;
    return last;
  };
}
