import crypto from 'node:crypto';
import type { Kysely } from 'kysely';
import { newId } from '../domain/ids.js';
import type { Database } from '../store/schema.js';

/** The events of the contract (API.md, Webhooks). */
export const EVENT_TYPES = [
  'document_created',
  'document_updated',
  'document_published',
  'document_deleted',
  'parse_job_completed',
  'parse_job_failed',
  'form_created',
  'form_updated',
  'form_published',
  'form_deleted',
  'webhook_test',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export type EventData = Record<string, unknown>;

/** `evt_` + 32 hex digits of a UUID v7 (time-ordered): the `webhook-id` of every attempt. */
export function newEventId(): string {
  return `evt_${newId().replace(/-/g, '')}`;
}

/** Whether an endpoint subscribed to `events` (a JSON array as stored) receives `type`. */
export function subscribed(events: string, type: EventType): boolean {
  const list = JSON.parse(events) as string[];
  return list.includes('*') || list.includes(type);
}

/**
 * Records an event in the outbox, in the transaction `trx` of the change it describes: committed
 * with it, rolled back with it. One delivery row per enabled endpoint of the workspace subscribed
 * to `type`; nothing at all (one indexed read) when there is none. `data` is worked out only then,
 * so a change nobody listens to pays for nothing else.
 */
export async function recordEvent(
  trx: Kysely<Database>,
  workspaceId: string,
  type: EventType,
  data: EventData | (() => EventData | Promise<EventData>),
): Promise<void> {
  const endpoints = await trx.selectFrom('webhook_endpoints').select(['id', 'events']).where('workspace_id', '=', workspaceId).where('enabled', '=', 1).execute();
  const targets = endpoints.filter((e) => subscribed(e.events, type));
  if (targets.length === 0) return;
  await queueEvent(trx, workspaceId, type, typeof data === 'function' ? await data() : data, targets.map((t) => t.id), false);
}

/** Writes the event and its deliveries to `endpointIds`; answers the event id and the delivery ids. */
export async function queueEvent(
  trx: Kysely<Database>,
  workspaceId: string,
  type: EventType,
  data: EventData,
  endpointIds: string[],
  manual: boolean,
): Promise<{ eventId: string; deliveryIds: string[] }> {
  const eventId = newEventId();
  const now = new Date().toISOString();
  const payload = JSON.stringify({ id: eventId, event: type, timestamp: now, workspaceId, data });
  await trx.insertInto('webhook_events').values({ id: eventId, workspace_id: workspaceId, type, payload, created_at: now }).execute();
  const rows = endpointIds.map((endpointId) => ({
    id: newId(),
    workspace_id: workspaceId,
    endpoint_id: endpointId,
    event_id: eventId,
    status: 'pending',
    manual: manual ? 1 : 0,
    scheduled_attempts: 0,
    next_attempt_at: now,
    lease_owner: null,
    lease_expires_at: null,
    created_at: now,
    updated_at: now,
  }));
  await trx.insertInto('webhook_deliveries').values(rows).execute();
  return { eventId, deliveryIds: rows.map((r) => r.id) };
}

/** A new signing secret: `whsec_` + base64 of 32 random bytes. */
export function newSecret(): string {
  return `whsec_${crypto.randomBytes(32).toString('base64')}`;
}
