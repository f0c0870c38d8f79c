import crypto from 'node:crypto';

/**
 * Signed download URLs served by formsign itself (stores without presigned URLs of their own):
 * `…/documents/{id}/file?expires=<Unix seconds>&signature=<base64url HMAC-SHA256>` over
 * `"<id>\n<expires>"` with the deployment's secret (`serverSecret('download_url')`). The document's
 * id names its bytes for good (a document's file never changes), so the URL needs nothing else.
 */
export class DownloadSigner {
  constructor(private readonly secret: Buffer) {}

  sign(documentId: string, expires: number): string {
    return crypto.createHmac('sha256', this.secret).update(`${documentId}\n${expires}`).digest('base64url');
  }

  /** Whether `signature` is this deployment's for `documentId` until `expires`, and `expires` is not past. */
  verify(documentId: string, expires: string, signature: string, nowMs: number): 'ok' | 'expired' | 'invalid' {
    if (!/^[0-9]{1,12}$/.test(expires) || !/^[A-Za-z0-9_-]{43}$/.test(signature)) return 'invalid';
    const expected = Buffer.from(this.sign(documentId, Number(expires)));
    if (!crypto.timingSafeEqual(expected, Buffer.from(signature))) return 'invalid';
    return Number(expires) * 1000 <= nowMs ? 'expired' : 'ok';
  }
}
