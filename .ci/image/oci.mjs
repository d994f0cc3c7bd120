// The second half of .ci/image/build.sh: from the two root file systems it made
// (.cache/image/rootfs-amd64 and -arm64), the OCI image layout and its archive
// (docs/adr/0058-bundles-and-a-small-image.md):
//   - per architecture a CycloneDX SBOM (the production packages of package-lock.json that the
//     bundles contain, Node, the Debian packages), written beside the archive and into /app;
//   - two layers each (runtime: everything but /app; application: /app), tarred reproducibly
//     (sorted, numeric root owner, the commit's time) and gzipped;
//   - the image config (user 65532, the default command, the compile cache), the manifest, and
//     one image index for both, named by the version in index.json;
//   - sizes.json: each architecture's uncompressed (layers as tar) and compressed (what a pull
//     transfers: the gzipped layers, config and manifest) size.
//
//   node .ci/image/oci.mjs --work DIR --version V --revision SHA --epoch SECONDS
//     --node-version V --debian "pkg pkg ..."

import { Buffer } from 'node:buffer';
import { execFileSync } from 'node:child_process';
import console from 'node:console';
import { createHash } from 'node:crypto';
import {
  existsSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
  mkdirSync,
  renameSync,
} from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values: o } = parseArgs({
  options: {
    work: { type: 'string' },
    version: { type: 'string' },
    revision: { type: 'string' },
    epoch: { type: 'string' },
    'node-version': { type: 'string' },
    debian: { type: 'string' },
  },
});
for (const k of ['work', 'version', 'revision', 'epoch', 'node-version', 'debian']) {
  if (o[k] === undefined) throw new Error(`oci.mjs: --${k} is required`);
}
const work = o.work;
const epoch = Number(o.epoch);
const created = new Date(epoch * 1000).toISOString();
const ARCHES = [
  { arch: 'amd64', npm: 'x64' },
  { arch: 'arm64', npm: 'arm64' },
];
const SOURCE = 'https://github.com/cozystack/source-watcher-recovery';

const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');
const layout = join(work, 'oci');
rmSync(layout, { recursive: true, force: true });
mkdirSync(join(layout, 'blobs', 'sha256'), { recursive: true });

/** Writes a blob into the layout; returns its descriptor. */
function blob(mediaType, buf, extra = {}) {
  const digest = sha256(buf);
  writeFileSync(join(layout, 'blobs', 'sha256', digest), buf);
  return { mediaType, digest: `sha256:${digest}`, size: buf.length, ...extra };
}

const json = (v) => Buffer.from(JSON.stringify(v));

// --- SBOM ---------------------------------------------------------------------------------------
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const toolchainLock = JSON.parse(readFileSync('toolchain/package-lock.json', 'utf8'));
const meta = JSON.parse(readFileSync(join(work, 'bundle-meta.json'), 'utf8'));
const bundled = new Set();
for (const input of Object.keys(meta.inputs)) {
  const m = /^(?:.*\/)?node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (m !== null) bundled.add(input.slice(0, input.indexOf(m[1]) + m[1].length));
}

function purlNpm(name, version) {
  return `pkg:npm/${name.startsWith('@') ? `%40${name.slice(1)}` : name}@${version}`;
}

function hashesOf(integrity) {
  const m = /^sha512-(.+)$/.exec(integrity ?? '');
  return m ? [{ alg: 'SHA-512', content: Buffer.from(m[1], 'base64').toString('hex') }] : [];
}

function debianPackages(arch) {
  const dir = join(work, `debian-${arch}`, 'var', 'cache', 'apt', 'archives');
  const wanted = new Set(o.debian.split(' '));
  const out = [];
  for (const f of readdirSync(dir)
    .filter((x) => x.endsWith('.deb'))
    .sort()) {
    const [name, version, debArch] = f.replace(/\.deb$/, '').split('_');
    if (!wanted.has(name)) continue;
    out.push({
      type: 'library',
      name,
      version: decodeURIComponent(version),
      purl: `pkg:deb/debian/${name}@${decodeURIComponent(version)}?arch=${debArch}&distro=debian-12`,
      hashes: [{ alg: 'SHA-256', content: sha256(readFileSync(join(dir, f))) }],
    });
  }
  const missing = [...wanted].filter((n) => !out.some((c) => c.name === n));
  if (missing.length > 0) throw new Error(`oci.mjs: no .deb for ${missing.join(', ')} (${arch})`);
  return out;
}

function sbom(arch, npmArch) {
  const components = [];
  for (const [path, p] of Object.entries(lock.packages)) {
    if (path === '' || p.dev === true || !bundled.has(path)) continue;
    const name = p.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    components.push({
      type: 'library',
      name,
      version: p.version,
      purl: purlNpm(name, p.version),
      ...(p.license ? { licenses: [{ license: { id: p.license } }] } : {}),
      hashes: hashesOf(p.integrity),
    });
  }
  const nodePkg = `node-linux-${npmArch}`;
  const node = toolchainLock.packages[`node_modules/${nodePkg}`];
  components.push({
    type: 'application',
    name: nodePkg,
    version: node.version,
    purl: purlNpm(nodePkg, node.version),
    hashes: hashesOf(node.integrity),
    description: 'Node.js, the binary only (bin/node, stripped)',
  });
  components.push(...debianPackages(arch));
  components.sort((a, b) => a.purl.localeCompare(b.purl));
  return {
    bomFormat: 'CycloneDX',
    specVersion: '1.5',
    version: 1,
    serialNumber: `urn:uuid:${uuidFrom(sha256(json(components)) + arch)}`,
    metadata: {
      timestamp: created,
      component: {
        type: 'container',
        name: 'source-watcher-recovery',
        version: o.version,
        properties: [
          { name: 'arch', value: arch },
          { name: 'revision', value: o.revision },
        ],
      },
      tools: { components: [{ type: 'application', name: '.ci/image/oci.mjs' }] },
    },
    components,
  };
}

function uuidFrom(hex) {
  const h = sha256(hex);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

// --- layers -------------------------------------------------------------------------------------
function tarLayer(root, paths, exclude) {
  const args = [
    '--create',
    '--file=-',
    `--directory=${root}`,
    '--sort=name',
    `--mtime=@${epoch}`,
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '--format=posix',
    '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
    ...exclude.map((e) => `--exclude=${e}`),
    ...paths,
  ];
  return execFileSync('tar', args, { maxBuffer: 1 << 30 });
}

const gzip = (buf) => execFileSync('gzip', ['-n', '-9', '-c'], { input: buf, maxBuffer: 1 << 30 });

const manifests = [];
const sizes = {};
for (const { arch, npm } of ARCHES) {
  const root = join(work, `rootfs-${arch}`);
  if (!existsSync(root)) throw new Error(`oci.mjs: ${root} is missing (run .ci/image/build.sh)`);
  const bom = sbom(arch, npm);
  const bomText = `${JSON.stringify(bom, null, 2)}\n`;
  writeFileSync(join(work, `sbom-${arch}.cdx.json`), bomText);
  writeFileSync(join(root, 'app', 'sbom.cdx.json'), bomText);
  const top = readdirSync(root)
    .filter((x) => x !== 'app')
    .sort()
    .map((x) => `./${x}`);
  const layers = [tarLayer(root, top, []), tarLayer(root, ['./app'], [])];
  const descriptors = [];
  const diffIds = [];
  for (const tar of layers) {
    diffIds.push(`sha256:${sha256(tar)}`);
    descriptors.push(blob('application/vnd.oci.image.layer.v1.tar+gzip', gzip(tar)));
  }
  const compileCache = existsSync(join(root, 'app', '.cache', 'node-compile-cache'));
  const config = {
    created,
    architecture: arch,
    os: 'linux',
    config: {
      User: '65532:65532',
      Env: [
        'PATH=/usr/local/bin',
        'NODE_ENV=production',
        'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt',
        ...(compileCache ? ['NODE_COMPILE_CACHE=/app/.cache/node-compile-cache'] : []),
      ],
      WorkingDir: '/app',
      Cmd: ['node', 'dist/functions/detect/main.js'],
      ExposedPorts: { '8080/tcp': {} },
      Labels: {
        'org.opencontainers.image.title': 'source-watcher-recovery',
        'org.opencontainers.image.version': o.version,
        'org.opencontainers.image.revision': o.revision,
        'org.opencontainers.image.source': SOURCE,
        'org.opencontainers.image.licenses': 'Apache-2.0',
      },
    },
    rootfs: { type: 'layers', diff_ids: diffIds },
    history: [
      { created, created_by: `.ci/image/build.sh: node ${o['node-version']}, Debian ${o.debian}` },
      { created, created_by: '.ci/image/build.sh: the bundles (toolchain/bundle.mjs)' },
    ],
  };
  const configDesc = blob('application/vnd.oci.image.config.v1+json', json(config));
  const manifest = {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: configDesc,
    layers: descriptors,
    annotations: { 'org.opencontainers.image.created': created },
  };
  const manifestDesc = blob('application/vnd.oci.image.manifest.v1+json', json(manifest), {
    platform: { architecture: arch, os: 'linux' },
  });
  manifests.push(manifestDesc);
  const uncompressed = layers.reduce((n, t) => n + t.length, 0);
  const compressed =
    descriptors.reduce((n, d) => n + d.size, 0) + configDesc.size + manifestDesc.size;
  sizes[arch] = {
    manifest: manifestDesc.digest,
    uncompressedBytes: uncompressed,
    compressedBytes: compressed,
    layers: layers.map((t, i) => ({ uncompressed: t.length, compressed: descriptors[i].size })),
  };
}

const index = {
  schemaVersion: 2,
  mediaType: 'application/vnd.oci.image.index.v1+json',
  manifests,
};
const indexDesc = blob('application/vnd.oci.image.index.v1+json', json(index), {
  annotations: { 'org.opencontainers.image.ref.name': o.version },
});
writeFileSync(join(layout, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
writeFileSync(
  join(layout, 'index.json'),
  JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [indexDesc],
  }),
);
const archive = join(work, 'source-watcher-recovery.oci.tar');
const tmp = `${archive}.tmp`;
writeFileSync(tmp, tarLayer(layout, ['.'], []));
renameSync(tmp, archive);
const summary = {
  index: indexDesc.digest,
  version: o.version,
  revision: o.revision,
  archive,
  ...sizes,
};
writeFileSync(join(work, 'sizes.json'), `${JSON.stringify(summary, null, 2)}\n`);
const mib = (n) => `${(n / 1048576).toFixed(1)} MiB`;
console.log(
  `image: index ${indexDesc.digest} (${o.version}) in ${archive} (${mib(statSync(archive).size)})`,
);
for (const { arch } of ARCHES) {
  const s = sizes[arch];
  console.log(
    `image: linux/${arch} ${s.manifest}: ${mib(s.uncompressedBytes)} uncompressed, ${mib(s.compressedBytes)} compressed`,
  );
}
