/**
 * The S3 peer of bench/upload.ts in a process of its own (so that its work does not share the
 * benchmark client's event loop): s3rver on PORT with the bucket BUCKET, files under DIR.
 */
import S3rver from 's3rver';

const server = new S3rver({ address: '127.0.0.1', port: Number(process.env.PORT), silent: true, directory: process.env.DIR!, configureBuckets: [{ name: process.env.BUCKET!, configs: [] }] });
await server.run();
console.log('ready');
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
