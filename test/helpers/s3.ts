import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
// s3rver (a dev dependency) is the S3 protocol peer of the tests: a stand-in for real object
// storage, speaking the S3 REST API over HTTP with SigV4 signatures.
import S3rver from 's3rver';
import type { S3Config } from '../../src/config.js';

export interface TestS3 {
  config: S3Config;
  /** The settings a `formsign` process needs to use this bucket. */
  env: Record<string, string>;
  /**
   * Multipart uploads s3rver still keeps (its own directory: it implements neither
   * ListMultipartUploads nor AbortMultipartUpload, which S3 does).
   */
  openMultipartUploads(): string[];
  close(): Promise<void>;
}

/** An s3rver on a free loopback port with one fresh bucket, its files in a temporary directory. */
export async function startTestS3(): Promise<TestS3> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'formsign-s3-'));
  const bucket = `formsign-${crypto.randomBytes(4).toString('hex')}`;
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] });
  const { port } = (await server.run()) as { port: number };
  const endpoint = `http://127.0.0.1:${port}`;
  const prefix = 'docs/';
  const config: S3Config = {
    endpoint,
    bucket,
    region: 'us-east-1',
    // s3rver's fixed credentials.
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    forcePathStyle: true,
    prefix,
  };
  return {
    config,
    env: {
      BLOB_STORE: 's3',
      S3_ENDPOINT: endpoint,
      S3_BUCKET: bucket,
      S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_FORCE_PATH_STYLE: 'true',
      S3_PREFIX: prefix,
    },
    openMultipartUploads() {
      const dir = path.join(directory, bucket, '._S3rver_uploads');
      return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
    },
    async close() {
      await server.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
