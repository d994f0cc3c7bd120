// Every AG read page after page as detect's sweep reads them (SWEEP_PAGE_SIZE a page, continue
// tokens, from etcd): P6's baseline, and P5's count of the fleet it sweeps.

import { SWEEP_PAGE_SIZE } from '../../functions/detect/sweep.js';
import type { KubePort } from '../../shared/kube/port.js';

/** The number of AGs `kube` lists in every namespace. */
export async function listAllAgs(kube: KubePort): Promise<number> {
  let items = 0;
  let token: string | undefined;
  do {
    const page = await kube.listArtifactGenerators({
      limit: SWEEP_PAGE_SIZE,
      ...(token !== undefined ? { continueToken: token } : {}),
    });
    items += page.items.length;
    token = page.continueToken;
  } while (token !== undefined);
  return items;
}
