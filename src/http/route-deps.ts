import type { Deps } from '../services/deps.js';
import type { DownloadSigner } from '../blobs/download-url.js';
import type { ListStreams } from './list-streams.js';
import type { Slots } from './slots.js';

/**
 * The one dependencies object every route module receives (`xRoutes(app, deps)`, registered the
 * same way by `buildApp`): what the services need, plus what only HTTP needs.
 */
export interface RouteDeps extends Deps {
  /** Uploads in progress, per workspace and in all (slots.ts). */
  uploads: Slots;
  /** Lists of long documents being streamed, and their steps (list-streams.ts). */
  lists: ListStreams;
  /** Signed download URLs (`downloadUrl`). */
  downloads: DownloadUrlDeps;
}

/** Signed download URLs (`downloadUrl`), an HTTP matter: built by `buildApp`. */
export interface DownloadUrlDeps {
  signer: DownloadSigner;
  /** `PUBLIC_BASE_URL`; `null`: the scheme and host the request came to. */
  publicBaseUrl: string | null;
  expiresS: number;
}
