/**
 * Calls as an integrator writes them, compiled (never run) by the root test suite
 * (test/client/staleness.test.ts) with `strict` and `exactOptionalPropertyTypes`: a type that
 * refuses a valid request, or a client source that does not compile under those settings, fails it.
 */
import { createFormsignClient } from '../src/index.js';

export async function usage(apiKey: string, pdf: Uint8Array): Promise<void> {
  const client = createFormsignClient({ baseUrl: 'http://127.0.0.1:3000', apiKey });
  const { data: form } = await client.POST('/api/v1/forms', { body: { title: 'Onboarding' } });
  const id = form!.data.id;
  // Options with defaults may be left out: an mcq needs only its choices, a rating nothing but what it changes.
  await client.POST('/api/v1/forms/{id}/questions', { params: { path: { id } }, body: { questionText: 'Colour', type: 'mcq', options: { choices: ['Red', 'Blue'] } } });
  await client.POST('/api/v1/forms/{id}/questions', { params: { path: { id } }, body: { questionText: 'How much?', type: 'rating', options: { max: 10 } } });
  await client.POST('/api/v1/forms/{id}/questions', { params: { path: { id } }, body: { questionText: 'Amount', type: 'slider', options: { max_value: 10 } } });
  const { data: doc, error } = await client.uploadDocument(pdf, { filename: 'contract.pdf' });
  if (error) throw new Error(`${error.code}: ${error.hint}`);
  const documentId: string | undefined = doc?.id;
  void documentId;
}
