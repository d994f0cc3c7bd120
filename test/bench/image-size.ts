// IMAGE: the image's size per architecture (issue 34), from what `npm run image` wrote
// (.cache/image/sizes.json, .ci/image/oci.mjs): uncompressed (the layers as tar, what the node's
// storage holds) and compressed (what a pull transfers: the gzipped layers, config and manifest).
// The bench does not build the image (minutes); without sizes.json the rows are unmeasured.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { unmeasuredRow, valueRow, type BenchModule, type BenchRow } from './types.js';

const MAX_UNCOMPRESSED_MIB = 120;
const ARCHES = ['amd64', 'arm64'] as const;

interface ArchSizes {
  manifest: string;
  uncompressedBytes: number;
  compressedBytes: number;
}
type Sizes = { index: string; version: string; revision?: string } & Partial<
  Record<(typeof ARCHES)[number], ArchSizes>
>;

const mib = (bytes: number): number => Math.round((bytes / 1048576) * 10) / 10;

export const image: BenchModule = {
  id: 'IMAGE',
  title: 'image size',
  async run(ctx) {
    let sizes: Sizes;
    try {
      sizes = JSON.parse(
        await readFile(join(ctx.root, '.cache', 'image', 'sizes.json'), 'utf8'),
      ) as Sizes;
    } catch {
      return ARCHES.map((arch) =>
        unmeasuredRow(
          'IMAGE',
          `linux/${arch} image, uncompressed`,
          `<= ${MAX_UNCOMPRESSED_MIB} MiB`,
          'n/a (run npm run image first: .cache/image/sizes.json)',
        ),
      );
    }
    const rows: BenchRow[] = [];
    for (const arch of ARCHES) {
      const s = sizes[arch];
      if (s === undefined) {
        rows.push(
          unmeasuredRow('IMAGE', `linux/${arch} image`, '-', `n/a (no ${arch} in sizes.json)`),
        );
        continue;
      }
      const detail = { manifest: s.manifest, index: sizes.index, revision: sizes.revision };
      rows.push(
        valueRow({
          id: 'IMAGE',
          metric: `linux/${arch} image, uncompressed (layers as tar)`,
          value: mib(s.uncompressedBytes),
          unit: 'MiB',
          target: `<= ${MAX_UNCOMPRESSED_MIB} MiB`,
          pass: mib(s.uncompressedBytes) <= MAX_UNCOMPRESSED_MIB,
          detail: { ...detail, bytes: s.uncompressedBytes },
        }),
        valueRow({
          id: 'IMAGE',
          metric: `linux/${arch} image, compressed (pull size: gzipped layers, config, manifest)`,
          value: mib(s.compressedBytes),
          unit: 'MiB',
          target: 'report',
          pass: null,
          detail: { ...detail, bytes: s.compressedBytes },
        }),
      );
    }
    ctx.log(
      `  index ${sizes.index} (${sizes.version}${sizes.revision ? `, ${sizes.revision}` : ''})`,
    );
    return rows;
  },
};
