import { Type } from 'typebox';
import { paginationQuery } from '../pagination.js';
import { EVENT_TYPES } from '../../webhooks/events.js';
import { Id, Nullable, OneOf, Timestamp } from './common.js';

const EventName = OneOf([...EVENT_TYPES, '*'], { description: 'An event type, or "*" alone for every event' });
const Events = Type.Array(EventName, { minItems: 1, maxItems: 50, description: 'The events the endpoint receives ("*" alone: all of them)' });
const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'An https URL that does not resolve to a loopback, private, link-local or metadata address (see WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE)' });
const Description = Nullable(Type.String({ maxLength: 500 }));

export const WebhookEndpoint = Type.Object(
  {
    id: Id,
    url: Type.String(),
    events: Type.Array(EventName),
    description: Nullable(Type.String()),
    enabled: Type.Boolean(),
    disabledReason: Nullable(Type.String({ description: 'Why the service disabled the endpoint (after 5 days of failed deliveries); null otherwise' })),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'WebhookEndpoint' },
);

const Secret = Type.String({ pattern: '^whsec_', description: 'The signing secret: "whsec_" + base64 of 32 random bytes. Shown only in this answer.' });

export const WebhookEndpointWithSecret = Type.Intersect([WebhookEndpoint, Type.Object({ secret: Secret })], { title: 'WebhookEndpointWithSecret' });

export const RotatedEndpoint = Type.Intersect(
  [WebhookEndpoint, Type.Object({ secret: Secret, previousSecretExpiresAt: Type.String({ format: 'date-time', description: 'Until then the previous secret signs beside the new one' }) })],
  { title: 'RotatedWebhookEndpoint' },
);

export const CreateWebhookBody = Type.Object(
  { url: Url, events: Events, description: Type.Optional(Description), enabled: Type.Optional(Type.Boolean({ default: true })) },
  { additionalProperties: false },
);

export const UpdateWebhookBody = Type.Object(
  { url: Type.Optional(Url), events: Type.Optional(Events), description: Type.Optional(Description), enabled: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);

export const NoBody = Type.Object({}, { additionalProperties: false });

export const Attempt = Type.Object({
  at: Timestamp,
  durationMs: Type.Integer({ minimum: 0 }),
  responseStatus: Nullable(Type.Integer()),
  error: Nullable(Type.String({ description: 'Why the attempt failed when there is no 2xx status (timeout, connection refused, refused address, redirect…)' })),
  responseBody: Nullable(Type.String({ description: 'The first 1 KiB of the response body' })),
});

export const DeliveryStatus = OneOf(['pending', 'succeeded', 'failed'] as const);

export const Delivery = Type.Object(
  {
    id: Id,
    eventId: Type.String({ description: 'The webhook-id header of every attempt' }),
    event: OneOf(EVENT_TYPES),
    status: DeliveryStatus,
    attempts: Type.Array(Attempt),
    nextAttemptAt: Nullable(Timestamp),
    createdAt: Timestamp,
  },
  { title: 'WebhookDelivery' },
);

export const ListWebhooksQuery = Type.Object({ ...paginationQuery }, { additionalProperties: false });
export const ListDeliveriesQuery = Type.Object({ ...paginationQuery, status: Type.Optional(DeliveryStatus) }, { additionalProperties: false });
export const DeliveryParams = Type.Object({ id: Type.String(), deliveryId: Type.String() });
