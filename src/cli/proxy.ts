/**
 * The CLI honours the usual proxy variables (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, lower case
 * first, as curl and undici read them) through undici's own EnvHttpProxyAgent, passed to the
 * client as its `dispatcher`. The variables come from the command's context, not
 * process.env, so an in-process run sees only what it was given.
 */
import { EnvHttpProxyAgent, Pool, type Dispatcher } from 'undici';
import { AdsClient, agentOptions, type ClientOptions } from '../api/client.js';
import { ConfigError } from '../errors.js';

function proxyVariable(env: NodeJS.ProcessEnv, name: string): string {
  return env[name.toLowerCase()] ?? env[name] ?? '';
}

/** A proxy agent when HTTPS_PROXY or HTTP_PROXY is set, else undefined (direct connections). */
export function proxyAgentFromEnv(env: NodeJS.ProcessEnv, options: ClientOptions): Dispatcher | undefined {
  const httpProxy = proxyVariable(env, 'HTTP_PROXY');
  const httpsProxy = proxyVariable(env, 'HTTPS_PROXY');
  if (httpProxy === '' && httpsProxy === '') return undefined;
  for (const [name, value] of [
    ['HTTP_PROXY', httpProxy],
    ['HTTPS_PROXY', httpsProxy],
  ] as const) {
    // Never echoed: a proxy URL may carry a user and password.
    if (value !== '' && !URL.canParse(value)) {
      throw new ConfigError('config_invalid_value', `${name} is not a URL`, {
        fix: `set ${name} to the proxy's URL, such as http://proxy.example.com:3128, or unset it`,
      });
    }
  }
  // Empty strings, not undefined: undefined would make undici read process.env itself.
  const agent = agentOptions(options);
  return new EnvHttpProxyAgent({
    ...agent,
    httpProxy,
    httpsProxy,
    noProxy: proxyVariable(env, 'NO_PROXY'),
    // The proxy's own client, which sends the CONNECT: undici makes it with its defaults, so a
    // proxy that takes the connection and never answers held the request for 300 s an attempt
    // (the request's signal does not reach it); it answers within the headers timeout, or the
    // attempt fails as a headers timeout.
    clientFactory: (origin, opts) =>
      new Pool(origin, {
        ...opts,
        ...(agent.headersTimeout === undefined ? {} : { headersTimeout: agent.headersTimeout }),
      }),
  });
}

/** A client that closes the proxy agent it was given along with itself (the CLI made it for this client alone). */
class ProxiedClient extends AdsClient {
  override readonly ownsDispatcher = true;

  constructor(
    options: ClientOptions,
    private readonly proxy: Dispatcher,
  ) {
    super({ ...options, dispatcher: proxy });
  }

  override async close(): Promise<void> {
    await super.close();
    await this.proxy.close();
  }
}

/** createClient, through a proxy when the environment names one. */
export function createCliClient(env: NodeJS.ProcessEnv, options: ClientOptions): AdsClient {
  const proxy = proxyAgentFromEnv(env, options);
  if (proxy === undefined) return new AdsClient(options);
  try {
    return new ProxiedClient(options, proxy);
  } catch (error) {
    void proxy.close();
    throw error;
  }
}
