import type { Deps } from '../services/deps.js';
import type { UploadSlots } from './slow-clients.js';

/**
 * The one dependencies object every route module receives (`xRoutes(app, deps)`, registered the
 * same way by `buildApp`): what the services need, plus what only HTTP needs.
 */
export interface RouteDeps extends Deps {
  /** Uploads in progress, per workspace and in all (slow-clients.ts). */
  uploads: UploadSlots;
}
