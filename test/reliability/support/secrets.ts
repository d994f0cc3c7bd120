// Credentials made of known marker strings, and a check that none of them (nor their base64, nor
// PEM armour) appears in a text.

import { randomBytes } from 'node:crypto';
import { stringify } from 'yaml';

export interface MarkedCredentials {
  readonly token: string;
  readonly password: string;
  readonly certMarker: string;
  readonly keyMarker: string;
  /** base64 of the PEM blocks, as they sit in a kubeconfig. */
  readonly certData: string;
  readonly keyData: string;
}

export function markedCredentials(): MarkedCredentials {
  const id = randomBytes(6).toString('hex');
  const certMarker = `CERT-MARKER-${id}-0123456789`;
  const keyMarker = `KEY-MARKER-${id}-0123456789`;
  const pem = (label: string, body: string): string =>
    `-----BEGIN ${label}-----\n${Buffer.from(body.repeat(3)).toString('base64')}\n${body}\n-----END ${label}-----\n`;
  return {
    token: `SECRET-TOKEN-${id}-0123456789`,
    password: `SECRET-PASSWORD-${id}-0123456789`,
    certMarker,
    keyMarker,
    certData: Buffer.from(pem('CERTIFICATE', certMarker)).toString('base64'),
    keyData: Buffer.from(pem('PRIVATE KEY', keyMarker)).toString('base64'),
  };
}

/** Substrings any encoding of `secret` in base64 must contain, at each of the 3 alignments. */
function base64Cores(secret: string): string[] {
  const out: string[] = [];
  for (let shift = 0; shift < 3; shift++) {
    const encoded = Buffer.from('x'.repeat(shift) + secret).toString('base64');
    // Drop the characters that mix with the neighbours.
    out.push(encoded.slice(4, encoded.length - 4));
  }
  return out;
}

/** Everything that must never be logged. */
export function forbiddenStrings(c: MarkedCredentials): string[] {
  const secrets = [c.token, c.password, c.certMarker, c.keyMarker];
  return [
    ...secrets,
    ...secrets.flatMap(base64Cores),
    c.certData.slice(0, 40),
    c.keyData.slice(0, 40),
    'BEGIN CERTIFICATE',
    'PRIVATE KEY',
    'Bearer ',
  ];
}

export function leaks(text: string, c: MarkedCredentials): string[] {
  return forbiddenStrings(c).filter((s) => text.includes(s));
}

export interface KubeconfigTarget {
  readonly server: string;
  readonly caData?: string;
  readonly insecure?: boolean;
}

/** A kubeconfig whose user carries every marked credential. */
export function markedKubeconfig(
  c: MarkedCredentials,
  target: KubeconfigTarget,
  user: 'token-and-cert' | 'token' | 'basic' = 'token-and-cert',
): string {
  const userBody =
    user === 'basic'
      ? { username: 'admin', password: c.password }
      : user === 'token'
        ? { token: c.token }
        : { token: c.token, 'client-certificate-data': c.certData, 'client-key-data': c.keyData };
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'c',
        cluster: {
          server: target.server,
          ...(target.caData !== undefined ? { 'certificate-authority-data': target.caData } : {}),
          ...(target.insecure === true ? { 'insecure-skip-tls-verify': true } : {}),
        },
      },
    ],
    users: [{ name: 'u', user: userBody }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  });
}
