// TLS in front of a plain dev server, for the connection suites: certificates made with openssl, and Debian's
// nginx terminating TLS on two ports (one demanding a client certificate, one an API key). nginx comes from
// scripts/install-test-servers.sh; a missing one fails the suite: there is no skip.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { findFreePort } from '../../lib/ports';
import { eventually } from './eventually';
import { tempDir } from './temporal';

const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((candidate) => existsSync(candidate));

export interface TestCertificates {
  readonly dir: string;
  /** The CA that signed the server and client certificates. */
  readonly ca: string;
  /** A CA that signed nothing here: trusting it fails the server's certificate. */
  readonly otherCa: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** A client certificate signed by the other CA: the mTLS port refuses it. */
  readonly strangerCert: string;
  readonly strangerKey: string;
}

const openssl = (dir: string, args: string[]) =>
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });

/** A CA, a server certificate for localhost and 127.0.0.1, and an X.509 v3 client certificate (rustls refuses v1). */
export async function makeTestCertificates(): Promise<TestCertificates> {
  const dir = await tempDir('tls');
  const selfSigned = (name: string) =>
    openssl(dir, [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
    ]);
  selfSigned('ca');
  selfSigned('other-ca');
  const signed = async (name: string, extensions: string, ca = 'ca') => {
    await writeFile(path.join(dir, `${name}.ext`), extensions);
    openssl(dir, [
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    ]);
    openssl(dir, [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.pem`,
      '-CAkey',
      `${ca}.key`,
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.pem`,
    ]);
  };
  const clientExtensions =
    'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n';
  await signed('server', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  await signed('client', clientExtensions);
  await signed('stranger', clientExtensions, 'other-ca');
  const file = (name: string) => path.join(dir, name);
  return {
    dir,
    ca: file('ca.pem'),
    otherCa: file('other-ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server.key'),
    clientCert: file('client.pem'),
    clientKey: file('client.key'),
    strangerCert: file('stranger.pem'),
    strangerKey: file('stranger.key'),
  };
}

export interface TlsProxy {
  /** host:port demanding a client certificate signed by the CA. */
  readonly mtlsAddress: string;
  /** host:port demanding `authorization: Bearer <apiKey>`. */
  readonly apiKeyAddress: string;
  stop(): Promise<void>;
}

/** nginx in the foreground, with its pid, logs and temp paths in a temp folder, in front of `upstream`. */
export async function startTlsProxy(upstream: string, certs: TestCertificates, apiKey: string): Promise<TlsProxy> {
  if (!NGINX) throw new Error("nginx not found: run scripts/install-test-servers.sh (it installs Debian's nginx)");
  const dir = await tempDir('nginx');
  await mkdir(path.join(dir, 'logs'));
  const [mtlsPort, apiKeyPort] = [await findFreePort(), await findFreePort()];
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((name) => `${name}_temp_path ${dir}/${name};`)
    .join(' ');
  const tls = `ssl_certificate ${certs.serverCert}; ssl_certificate_key ${certs.serverKey};`;
  await writeFile(
    path.join(dir, 'nginx.conf'),
    `daemon off; pid ${dir}/nginx.pid; error_log ${dir}/logs/error.log warn; worker_processes 1;
events { worker_connections 64; }
http {
  access_log off; ${temp}
  server {
    listen 127.0.0.1:${mtlsPort} ssl http2; ${tls}
    ssl_client_certificate ${certs.ca}; ssl_verify_client on;
    location / { grpc_pass grpc://${upstream}; }
  }
  server {
    listen 127.0.0.1:${apiKeyPort} ssl http2; ${tls}
    location / { if ($http_authorization != "Bearer ${apiKey}") { return 401; } grpc_pass grpc://${upstream}; }
  }
}
`,
  );
  const nginx: ChildProcess = spawn(
    NGINX,
    ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'logs', 'error.log')],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => nginx.once('exit', () => resolve()));
  const listening = async (port: number) =>
    new Promise<boolean>((resolve) => {
      const socket = net
        .connect(port, '127.0.0.1', () => socket.end(() => resolve(true)))
        .once('error', () => resolve(false));
    });
  await eventually(
    'nginx to listen',
    async () => {
      if (nginx.exitCode !== null)
        throw new Error(`nginx exited with code ${nginx.exitCode}: see ${dir}/logs/error.log`);
      return (await listening(mtlsPort)) && (await listening(apiKeyPort));
    },
    10_000,
  );
  return {
    mtlsAddress: `127.0.0.1:${mtlsPort}`,
    apiKeyAddress: `127.0.0.1:${apiKeyPort}`,
    async stop() {
      nginx.kill('SIGQUIT');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
