import type { Readable } from 'node:stream';
import { XMLParser } from 'fast-xml-parser';
import yauzl from 'yauzl';
import { UnreadableDocument } from './errors.js';
import { MAX_PAGES } from './limits.js';

/** Hard limits for opening a DOCX, so that a ZIP bomb or an XML trick fails fast with bounded memory. */
export const DOCX_LIMITS = {
  maxEntries: 2000,
  /** Sum of the declared uncompressed sizes of all entries. */
  maxTotalUncompressed: 256 * 1024 * 1024,
  /** Largest uncompressed entry. */
  maxEntryUncompressed: 64 * 1024 * 1024,
  /** Uncompressed ÷ compressed, for entries larger than 1 MiB uncompressed. */
  maxRatio: 100,
};

export interface DocxInfo {
  /** From docProps/app.xml (what Word wrote when it last saved), or `null` when absent. */
  pageCount: number | null;
  /** From the first section's page size in word/document.xml, in points, or `null`. */
  pageSize: { width: number; height: number } | null;
}

const FORBIDDEN = /<!(doctype|entity)/i;
/** Byte-order marks of UTF-16 and UTF-32, and the first bytes of BOM-less UTF-16 XML. */
const WIDE_TEXT = [[0xfe, 0xff], [0xff, 0xfe], [0x00, 0x00, 0xfe, 0xff], [0x3c, 0x00], [0x00, 0x3c]].map((b) => Buffer.from(b));


function openZip(file: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true, autoClose: true, strictFileNames: false, validateEntrySizes: true }, (error, zip) =>
      error || !zip ? reject(error ?? new Error('no zip')) : resolve(zip),
    );
  });
}

/** Whether the ZIP at `file` holds `word/document.xml` (reads only the central directory). */
export async function isDocx(file: string): Promise<boolean> {
  let zip: yauzl.ZipFile;
  try {
    zip = await openZip(file);
  } catch {
    return false;
  }
  return new Promise((resolve) => {
    let found = false;
    let seen = 0;
    zip.on('entry', (entry: yauzl.Entry) => {
      if (entry.fileName === 'word/document.xml') found = true;
      if (found || ++seen > DOCX_LIMITS.maxEntries) {
        zip.close();
        resolve(found);
      } else zip.readEntry();
    });
    zip.on('end', () => resolve(found));
    zip.on('error', () => resolve(false));
    zip.readEntry();
  });
}

/**
 * Reads what the service needs from a DOCX within `DOCX_LIMITS`, and refuses any XML part with a
 * DTD or entity declaration (LibreOffice will parse these files; an external entity must never
 * reach it).
 */
export async function inspectDocx(file: string): Promise<DocxInfo> {
  let zip: yauzl.ZipFile;
  try {
    zip = await openZip(file);
  } catch (error) {
    throw new UnreadableDocument(`the DOCX is not a readable ZIP archive (${(error as Error).message})`);
  }
  if (zip.entryCount > DOCX_LIMITS.maxEntries) {
    zip.close();
    throw new UnreadableDocument(`the DOCX has ${zip.entryCount} parts; at most ${DOCX_LIMITS.maxEntries} are accepted`);
  }
  const info: DocxInfo = { pageCount: null, pageSize: null };
  let total = 0;
  let hasDocument = false;
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', resolve);
      zip.on('entry', (entry: yauzl.Entry) => {
        const handle = async () => {
          if (entry.uncompressedSize > DOCX_LIMITS.maxEntryUncompressed) throw new UnreadableDocument(`the part ${entry.fileName} is too large`);
          total += entry.uncompressedSize;
          if (total > DOCX_LIMITS.maxTotalUncompressed) throw new UnreadableDocument('the DOCX expands to more than 256 MiB');
          if (entry.uncompressedSize > 1024 * 1024 && entry.uncompressedSize > DOCX_LIMITS.maxRatio * Math.max(1, entry.compressedSize)) {
            throw new UnreadableDocument(`the part ${entry.fileName} is compressed more than ${DOCX_LIMITS.maxRatio}:1 (a ZIP bomb?)`);
          }
          if (entry.fileName === 'word/document.xml') hasDocument = true;
          if (/\/$/.test(entry.fileName)) return;
          const keep = entry.fileName === 'docProps/app.xml';
          const text = await scanPart(zip, entry, keep, entry.fileName === 'word/document.xml');
          if (keep && text) info.pageCount = pagesFromAppXml(text);
          if (entry.fileName === 'word/document.xml' && text) info.pageSize = pageSizeFrom(text);
        };
        handle().then(() => zip.readEntry(), reject);
      });
      zip.readEntry();
    });
  } catch (error) {
    zip.close();
    if (error instanceof UnreadableDocument) throw error;
    throw new UnreadableDocument(`the DOCX cannot be read (${(error as Error).message})`);
  }
  if (!hasDocument) throw new UnreadableDocument('the DOCX has no word/document.xml');
  return info;
}

/**
 * Streams one part of the archive (every part: LibreOffice follows relationships to parts of any
 * name) and refuses what could make an XML parser reach outside the file or blow up: UTF-16/32
 * text (which would hide a declaration from this byte-level scan), an XML declaration of another
 * encoding, any DTD or entity declaration, and relationships to external resources other than
 * plain hyperlinks (LibreOffice would fetch linked images, OLE objects or templates while
 * converting). Returns the text when `keepAll`, the first `<w:pgSz …>` tag when `findPageSize`.
 */
function scanPart(zip: yauzl.ZipFile, entry: yauzl.Entry, keepAll: boolean, findPageSize: boolean): Promise<string | null> {
  const refuse = (why: string) => new UnreadableDocument(`the part ${entry.fileName} ${why}, which is not accepted`);
  const isRels = /\.rels$/i.test(entry.fileName);
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (error, stream?: Readable) => {
      if (error || !stream) return reject(error ?? new Error('no stream'));
      let first = true;
      let carry = '';
      let kept = '';
      let pageSize: string | null = null;
      const fail = (e: Error) => {
        stream.destroy();
        reject(e);
      };
      stream.on('data', (chunk: Buffer) => {
        if (first) {
          first = false;
          if (WIDE_TEXT.some((bom) => chunk.subarray(0, bom.length).equals(bom))) return fail(refuse('is UTF-16 or UTF-32 text'));
          const declared = /^(?:\xef\xbb\xbf)?\s*<\?xml[^>]*encoding\s*=\s*["']([^"']+)["']/i.exec(chunk.toString('latin1', 0, 200));
          if (declared && !/^(utf-?8|us-ascii)$/i.test(declared[1]!)) return fail(refuse(`declares the encoding ${declared[1]}`));
        }
        // Latin-1 maps every byte to one character: the scan sees exactly the bytes.
        const text = carry + chunk.toString('latin1');
        if (FORBIDDEN.test(text)) return fail(refuse('declares a DTD or entities'));
        if (isRels) {
          for (const rel of text.match(/<Relationship\b[^>]*>/g) ?? []) {
            if (/TargetMode\s*=\s*["']External["']/i.test(rel) && !/Type\s*=\s*["'][^"']*\/hyperlink["']/i.test(rel)) {
              return fail(refuse('links to an external resource other than a hyperlink'));
            }
          }
        }
        if (keepAll) {
          kept += chunk.toString('utf8');
          if (kept.length > 1024 * 1024) keepAll = false;
        }
        if (findPageSize && pageSize === null) {
          const match = /<w:pgSz\b[^>]*>/.exec(text);
          if (match) pageSize = match[0];
        }
        // Enough to hold a whole <Relationship …> or <w:pgSz …> tag across two chunks.
        carry = text.slice(-2048);
      });
      stream.on('error', reject);
      stream.on('end', () => resolve(keepAll ? kept : pageSize));
    });
  });
}

function pagesFromAppXml(xml: string): number | null {
  const parsed = new XMLParser({ processEntities: false, ignoreAttributes: true, parseTagValue: false }).parse(xml) as {
    Properties?: { Pages?: unknown };
  };
  const pages = Number(parsed.Properties?.Pages);
  if (Number.isInteger(pages) && pages > MAX_PAGES) throw new UnreadableDocument(`the DOCX claims ${pages} pages; at most ${MAX_PAGES} are accepted`);
  return Number.isInteger(pages) && pages > 0 ? pages : null;
}

function pageSizeFrom(tag: string): { width: number; height: number } | null {
  const w = /w:w="(\d+)"/.exec(tag);
  const h = /w:h="(\d+)"/.exec(tag);
  if (!w || !h) return null;
  // Twentieths of a point.
  const width = Number(w[1]) / 20;
  const height = Number(h[1]) / 20;
  return width > 0 && height > 0 ? { width, height } : null;
}
