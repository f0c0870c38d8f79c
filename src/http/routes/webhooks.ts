import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  redeliver,
  rotateSecret,
  sendTestEvent,
  updateEndpoint,
} from '../../webhooks/endpoints.js';
import { applyPagination, listEnvelope } from '../pagination.js';
import { pathId } from '../params.js';
import { workspaceOf } from '../principal.js';
import type { RouteDeps } from '../route-deps.js';
import { Deleted, IdParams, NoQuery, Ok, OkList, responses } from '../schemas/common.js';
import {
  CreateWebhookBody,
  Delivery,
  DeliveryParams,
  ListDeliveriesQuery,
  ListWebhooksQuery,
  NoBody,
  RotatedEndpoint,
  UpdateWebhookBody,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
} from '../schemas/webhooks.js';

const LABEL = 'Webhook endpoint';

/** `/webhooks`: endpoints, their secrets, test events and the delivery log (API.md, Webhooks). */
export function webhookRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const tags = ['Webhooks'];
  const config = { grants: ['webhooks:manage' as const] };
  const { store } = deps;
  const context = { store, ...deps.webhooks };

  app.get<{ Querystring: Static<typeof ListWebhooksQuery> }>('/webhooks', {
    config,
    schema: { tags, summary: 'List webhook endpoints, newest first', querystring: ListWebhooksQuery, response: responses(200, OkList(WebhookEndpoint)) },
    handler: async (request) => {
      const page = applyPagination(request.query);
      const { items, total } = await listEndpoints(store.db, workspaceOf(request), page);
      return listEnvelope(items, total, page);
    },
  });

  app.post<{ Body: Static<typeof CreateWebhookBody> }>('/webhooks', {
    config,
    schema: {
      tags,
      summary: 'Register a webhook endpoint (its signing secret is shown in this answer only)',
      querystring: NoQuery,
      body: CreateWebhookBody,
      response: responses(201, Ok(WebhookEndpointWithSecret), { location: 'The endpoint' }),
    },
    handler: async (request, reply) => {
      const endpoint = await createEndpoint(context, workspaceOf(request), request.body);
      reply.code(201).header('location', `/api/v1/webhooks/${endpoint.id}`);
      return { success: true, data: endpoint };
    },
  });

  app.get<{ Params: Static<typeof IdParams> }>('/webhooks/:id', {
    config,
    schema: { tags, summary: 'Get a webhook endpoint', params: IdParams, querystring: NoQuery, response: responses(200, Ok(WebhookEndpoint)) },
    handler: async (request) => ({ success: true, data: await getEndpoint(store.db, workspaceOf(request), pathId(LABEL, request.params.id)) }),
  });

  app.put<{ Params: Static<typeof IdParams>; Body: Static<typeof UpdateWebhookBody> }>('/webhooks/:id', {
    config,
    schema: {
      tags,
      summary: 'Update a webhook endpoint (only the keys given; enabled: true re-enables a disabled one)',
      params: IdParams,
      querystring: NoQuery,
      body: UpdateWebhookBody,
      response: responses(200, Ok(WebhookEndpoint)),
    },
    handler: async (request) => ({ success: true, data: await updateEndpoint(context, workspaceOf(request), pathId(LABEL, request.params.id), request.body) }),
  });

  app.delete<{ Params: Static<typeof IdParams> }>('/webhooks/:id', {
    config,
    schema: { tags, summary: 'Delete a webhook endpoint with its delivery log', params: IdParams, querystring: NoQuery, response: responses(200, Deleted) },
    handler: async (request) => {
      const id = pathId(LABEL, request.params.id);
      await deleteEndpoint(store.db, workspaceOf(request), id);
      return { success: true, data: { id, deleted: true } };
    },
  });

  app.post<{ Params: Static<typeof IdParams> }>('/webhooks/:id/rotate-secret', {
    config: { ...config, optionalBody: true },
    schema: {
      tags,
      summary: 'Replace the signing secret (the previous one keeps signing beside it for 24 hours)',
      params: IdParams,
      querystring: NoQuery,
      body: NoBody,
      response: responses(200, Ok(RotatedEndpoint)),
    },
    handler: async (request) => ({ success: true, data: await rotateSecret(store, workspaceOf(request), pathId(LABEL, request.params.id)) }),
  });

  app.post<{ Params: Static<typeof IdParams> }>('/webhooks/:id/test', {
    config: { ...config, optionalBody: true },
    schema: {
      tags,
      summary: 'Queue a webhook_test event to this endpoint alone',
      params: IdParams,
      querystring: NoQuery,
      body: NoBody,
      // 200 (API.md: everything but a create, a parse job's start and a redelivery is 200); the
      // delivery is queued, as its `status` (`pending`) says.
      response: responses(200, Ok(Delivery)),
    },
    handler: async (request) => {
      const delivery = await sendTestEvent(context, workspaceOf(request), pathId(LABEL, request.params.id));
      return { success: true, data: delivery };
    },
  });

  app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof ListDeliveriesQuery> }>('/webhooks/:id/deliveries', {
    config,
    schema: {
      tags,
      summary: 'List the deliveries to an endpoint with their attempts, newest first',
      params: IdParams,
      querystring: ListDeliveriesQuery,
      response: responses(200, OkList(Delivery)),
    },
    handler: async (request) => {
      const page = applyPagination(request.query);
      const { items, total } = await listDeliveries(store.db, workspaceOf(request), pathId(LABEL, request.params.id), { status: request.query.status }, page);
      return listEnvelope(items, total, page);
    },
  });

  app.post<{ Params: Static<typeof DeliveryParams> }>('/webhooks/:id/deliveries/:deliveryId/redeliver', {
    config: { ...config, optionalBody: true },
    schema: {
      tags,
      summary: 'Queue a delivery again, now, with the same event id',
      params: DeliveryParams,
      querystring: NoQuery,
      body: NoBody,
      response: responses(202, Ok(Delivery)),
    },
    handler: async (request, reply) => {
      const endpointId = pathId(LABEL, request.params.id);
      const delivery = await redeliver(context, workspaceOf(request), endpointId, pathId('Delivery', request.params.deliveryId));
      reply.code(202);
      return { success: true, data: delivery };
    },
  });
}
