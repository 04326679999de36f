import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { ProxyAgent } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../src/api/client.js';
import { listCustomAudiences } from '../src/api/endpoints.js';
import { startSandbox, type Sandbox } from '../src/sandbox/index.js';
import { runCli } from './helpers/cli.js';

/**
 * A real forward proxy on port 0: CONNECT tunnels (what undici's ProxyAgent uses, for http and
 * https targets alike) and absolute-URI requests. It records what it was asked for and refuses
 * CONNECTs to hosts listed in `refuse`.
 */
interface TestProxy {
  url: string;
  seen: string[];
  refuse: Set<string>;
  close(): Promise<void>;
}

async function startProxy(): Promise<TestProxy> {
  const seen: string[] = [];
  const refuse = new Set<string>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const upstream = httpRequest(req.url ?? '', { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    seen.push(`CONNECT ${target}`);
    if (refuse.has(target.replace(/:\d+$/, ''))) {
      client.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const [host, port] = [target.replace(/:\d+$/, ''), Number(target.split(':').pop())];
    const upstream = connect(port, host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    refuse,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let sandbox: Sandbox;
let proxy: TestProxy;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  proxy = await startProxy();
  env = {
    AUDIENCE_KIT_ADS_BASE_URL: sandbox.adsBaseUrl,
    AUDIENCE_KIT_CONSUMER_KEY: sandbox.credentials.consumerKey,
    AUDIENCE_KIT_CONSUMER_SECRET: sandbox.credentials.consumerSecret,
    AUDIENCE_KIT_ACCESS_TOKEN: sandbox.credentials.accessToken,
    AUDIENCE_KIT_ACCESS_TOKEN_SECRET: sandbox.credentials.accessTokenSecret,
    // The worker's own proxy settings, if any, must not decide these tests.
    HTTP_PROXY: '',
    http_proxy: undefined,
    HTTPS_PROXY: '',
    https_proxy: undefined,
    NO_PROXY: '',
    no_proxy: undefined,
  };
});

afterAll(async () => {
  await proxy.close();
  await sandbox.close();
});

beforeEach(() => {
  proxy.seen.length = 0;
  proxy.refuse.clear();
});

const sandboxHost = (): string => new URL(sandbox.adsBaseUrl).host;

describe('client dispatcher option', () => {
  it('sends every request through the given dispatcher and leaves it open on close()', async () => {
    const dispatcher = new ProxyAgent(proxy.url);
    try {
      const client = createClient({ adsBaseUrl: sandbox.adsBaseUrl, credentials: sandbox.credentials, dispatcher });
      const page = await listCustomAudiences(client, { accountId: sandbox.accounts.primary });
      expect(Array.isArray(page.data)).toBe(true);
      await client.close();
      expect(proxy.seen).toEqual([`CONNECT ${sandboxHost()}`]);
      // Still open: a second client shares it (and its tunnel).
      const second = createClient({ adsBaseUrl: sandbox.adsBaseUrl, credentials: sandbox.credentials, dispatcher });
      await listCustomAudiences(second, { accountId: sandbox.accounts.primary });
      await second.close();
    } finally {
      await dispatcher.close();
    }
  });

  it('refuses something that is not a dispatcher, naming the option', () => {
    expect(() =>
      createClient({
        adsBaseUrl: sandbox.adsBaseUrl,
        credentials: sandbox.credentials,
        dispatcher: {} as unknown as ProxyAgent,
      }),
    ).toThrow(/dispatcher/);
  });
});

describe('CLI proxy variables', () => {
  const list = (extra: NodeJS.ProcessEnv, ...flags: string[]) =>
    runCli(['audiences', 'list', '--account', sandbox.accounts.primary, ...flags], { env: { ...env, ...extra } });

  it('HTTP_PROXY: requests go through the proxy', async () => {
    const r = await list({ HTTP_PROXY: proxy.url });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(proxy.seen).toContain(`CONNECT ${sandboxHost()}`);
  });

  it('lower-case http_proxy is read too', async () => {
    const r = await list({ http_proxy: proxy.url });
    expect(r.code).toBe(0);
    expect(proxy.seen).toContain(`CONNECT ${sandboxHost()}`);
  });

  it('NO_PROXY: a listed host is reached directly', async () => {
    const r = await list({ HTTP_PROXY: proxy.url, NO_PROXY: 'example.com,127.0.0.1' });
    expect(r.code).toBe(0);
    expect(proxy.seen).toEqual([]);
  });

  it('without proxy variables nothing goes through the proxy', async () => {
    const r = await list({});
    expect(r.code).toBe(0);
    expect(proxy.seen).toEqual([]);
  });

  it('HTTPS_PROXY carries https origins (a refused CONNECT is a connection error)', async () => {
    proxy.refuse.add('ads.example.test');
    const r = await list(
      { HTTPS_PROXY: proxy.url, AUDIENCE_KIT_ADS_BASE_URL: 'https://ads.example.test' },
      '--max-attempts',
      '1',
    );
    expect(proxy.seen).toEqual(['CONNECT ads.example.test:443']);
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(/^error: /);
  });

  it('a proxy that takes the connection and never answers its CONNECT fails the attempt within the request timeout', async () => {
    const silent = createServer();
    const sockets: Socket[] = [];
    silent.on('connect', (_req, socket: Socket) => sockets.push(socket)); // never answered
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      const flags = ['--max-attempts', '1', '--request-timeout', '1s'];
      const r = await list({ HTTPS_PROXY: url, AUDIENCE_KIT_ADS_BASE_URL: 'https://ads.example.test' }, ...flags);
      expect(sockets.length).toBe(1);
      expect(r.code).toBe(6);
      expect(r.stderr).toMatch(/timed out \(headers timeout\)/);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('a proxy variable that is not a URL is a usage error that does not echo it', async () => {
    const r = await list({ HTTPS_PROXY: 'http://user:s3cret@[bad' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('HTTPS_PROXY is not a URL');
    expect(r.stderr).not.toContain('s3cret');
  });
});
