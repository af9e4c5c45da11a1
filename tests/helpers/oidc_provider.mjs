// A real OpenID provider for the identity tests: oidc-provider 9.13.3, run with the project's Node 22.
//
//   node oidc_provider.mjs   (configured by environment variables, all set by tests/identity/idp.py)
//
// PORT         the port to listen on, on 127.0.0.1 (0: a free one); the issuer is http://127.0.0.1:PORT
// KEYS         the private signing keys, a JSON array of JWKs (the first signs); rotation is a restart
// STATION      the station's resource URL: the audience a token must name to be exchanged (RFC 8693)
// CLIENTS      a JSON array of client metadata (client credentials, token exchange, the test user grant)
// ACCESS_TTL   lifetime of access tokens in seconds (default 3600)
//
// The issuer is printed on the first stdout line once it listens (the provider prints notices too).
//
// Test-only parts, never in a real deployment:
// * the grant `urn:test:user` issues an access token for a named user (`sub`, `groups`) to a
//   client allowed to use it, for a `resource`, without a browser;
// * GET /test/login?... completes an authorization-code interaction as `login_hint`, headless;
// * POST /test/revoke?sub=... forgets every grant of that user (its refresh tokens stop working);
// * GET /test/stats counts the tokens issued, by grant type.
import http from 'node:http';
import { createLocalJWKSet, jwtVerify } from 'jose';
import Provider, { errors } from 'oidc-provider';

const port = Number(process.env.PORT || 0);
const keys = JSON.parse(process.env.KEYS);
const station = process.env.STATION;
const clients = JSON.parse(process.env.CLIENTS || '[]');
const accessTtl = Number(process.env.ACCESS_TTL || 3600);
const SCOPES = ['openid', 'offline_access', 'mcp:tools', 'mcp:api', 'tools:read', 'tools:write', 'jira:read'];
const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const TEST_USER = 'urn:test:user';

const grantsOf = new Map(); // accountId -> grant ids, for /test/revoke
const granted = {}; // grant_type -> how many tokens the token endpoint issued, for /test/stats

function resourceInfo(resource) {
  // Every loopback resource is a resource server here: the station and the upstream test servers.
  if (!/^http:\/\/127\.0\.0\.1:\d+(\/.*)?$/.test(resource)) {
    throw new errors.InvalidTarget(`unknown resource ${resource}`);
  }
  return {
    scope: SCOPES.filter((s) => s !== 'openid' && s !== 'offline_access').join(' '),
    audience: resource,
    accessTokenTTL: accessTtl,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg: keys[0].alg } },
  };
}

let issuer;
const provider = await (async () => {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${server.address().port}`;
  const made = new Provider(issuer, {
    jwks: { keys },
    clients,
    scopes: SCOPES,
    clientDefaults: { id_token_signed_response_alg: keys[0].alg, grant_types: ['authorization_code'] },
    ttl: { AccessToken: accessTtl, ClientCredentials: accessTtl, RefreshToken: 86400, Grant: 86400 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      registration: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => resourceInfo(resource),
      },
    },
    pkce: { required: () => true },
    rotateRefreshToken: true,
    issueRefreshToken: (ctx, client) => client.grantTypeAllowed('refresh_token'),
    interactions: { url: (ctx, interaction) => `/test/interaction/${interaction.uid}` },
    extraTokenClaims: (ctx, token) => token.extra,
    findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  });
  made.proxy = false;
  made.on('grant.success', (ctx) => {
    const type = ctx.oidc.params.grant_type;
    granted[type] = (granted[type] || 0) + 1;
  });
  server.on('request', async (req, res) => {
    try {
      if (await testRoutes(made, req, res)) return;
    } catch (error) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
      return;
    }
    made.callback()(req, res);
  });
  return made;
})();

async function testRoutes(made, req, res) {
  const url = new URL(req.url, issuer);
  if (url.pathname.startsWith('/test/interaction/')) {
    const details = await made.interactionDetails(req, res);
    const accountId = details.params.login_hint;
    if (!accountId) {
      res.writeHead(400);
      res.end('login_hint (the test user) is missing');
      return true;
    }
    const grant = new made.Grant({ accountId, clientId: details.params.client_id });
    // every scope asked for (the provider knows the resource scopes as its own scopes too)
    grant.addOIDCScope(['openid', 'offline_access', ...String(details.params.scope || '').split(' ')].filter(Boolean).join(' '));
    const resource = details.params.resource;
    if (resource) grant.addResourceScope(resource, String(details.params.scope || '').split(' ').filter((s) => s !== 'openid' && s !== 'offline_access').join(' '));
    const grantId = await grant.save();
    grantsOf.set(accountId, [...(grantsOf.get(accountId) || []), grantId]);
    await made.interactionFinished(req, res, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
    return true;
  }
  if (url.pathname === '/test/stats') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(granted));
    return true;
  }
  if (url.pathname === '/test/revoke' && req.method === 'POST') {
    const sub = url.searchParams.get('sub');
    for (const id of grantsOf.get(sub) || []) {
      const grant = await made.Grant.find(id);
      if (grant) await grant.destroy();
    }
    grantsOf.delete(sub);
    res.writeHead(204);
    res.end();
    return true;
  }
  return false;
}

function newAccessToken(ctx, accountId, resource, scope, extra) {
  const { client } = ctx.oidc;
  const info = resourceInfo(resource);
  const granted = String(scope || '').split(' ').filter((s) => info.scope.split(' ').includes(s));
  const token = new provider.AccessToken({ accountId, client, scope: granted.join(' ') || undefined, gty: 'test' });
  token.resourceServer = new provider.ResourceServer(resource, info);
  token.extra = extra;
  return token;
}

async function respond(ctx, token, issuedTokenType) {
  const value = await token.save();
  ctx.body = {
    access_token: value,
    token_type: 'Bearer',
    expires_in: token.expiration,
    scope: token.scope,
    ...(issuedTokenType ? { issued_token_type: issuedTokenType } : {}),
  };
}

provider.registerGrantType(
  TEST_USER,
  async (ctx) => {
    const { sub, groups, resource, scope } = ctx.oidc.params;
    if (!sub || !resource) throw new errors.InvalidRequest('sub and resource are required');
    const extra = groups ? { groups: groups.split(',').filter(Boolean) } : {};
    await respond(ctx, newAccessToken(ctx, sub, resource, scope, extra));
  },
  ['sub', 'groups', 'resource', 'scope'],
);

const publicKeys = createLocalJWKSet({
  keys: keys.map(({ d, p, q, dp, dq, qi, ...pub }) => pub),
});

provider.registerGrantType(
  EXCHANGE,
  async (ctx) => {
    const { subject_token, subject_token_type, resource, scope } = ctx.oidc.params;
    if (subject_token_type !== ACCESS_TOKEN_TYPE) {
      throw new errors.InvalidRequest('subject_token_type must be an access token');
    }
    if (!resource) throw new errors.InvalidTarget('resource is required');
    let subject;
    try {
      ({ payload: subject } = await jwtVerify(subject_token, publicKeys, { issuer, audience: station, typ: 'at+jwt' }));
    } catch (error) {
      throw new errors.InvalidGrant(`the subject token is not valid for the station: ${error.message}`);
    }
    const extra = { act: { sub: ctx.oidc.client.clientId } };
    if (subject.groups) extra.groups = subject.groups;
    await respond(ctx, newAccessToken(ctx, subject.sub, resource, scope, extra), ACCESS_TOKEN_TYPE);
  },
  ['subject_token', 'subject_token_type', 'resource', 'scope', 'requested_token_type', 'audience'],
);

console.log(issuer);
