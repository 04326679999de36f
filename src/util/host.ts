/** A URL hostname (`new URL(u).hostname`, IPv6 in brackets) that only this machine can reach. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}
