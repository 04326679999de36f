/**
 * Whether process `pid` of this host still runs. Only ESRCH says it is gone: EPERM is someone
 * else's live process, and any other error is taken as alive too, so nothing of a live process
 * is ever removed on a guess.
 */
export function processRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
