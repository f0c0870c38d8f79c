/**
 * Writes docs/examples/contract.pdf, the sample document of the README's walk-through: a 3-page
 * "Service Agreement" with one AcroForm text field (the client's name, page 1) and a `{{…}}` text
 * tag for the signature (page 3), so that a parse job finds fields with the exact detectors.
 *
 *   node --import tsx scripts/sample-pdf.ts
 */
import fs from 'node:fs';
import path from 'node:path';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';

const OUT = path.resolve(import.meta.dirname, '../docs/examples/contract.pdf');

const doc = await PDFDocument.create();
doc.setTitle('Service Agreement');
doc.setCreationDate(new Date('2026-01-01T00:00:00Z'));
doc.setModificationDate(new Date('2026-01-01T00:00:00Z'));
doc.setProducer('formsign scripts/sample-pdf.ts');
doc.setCreator('formsign');
const font = await doc.embedFont(StandardFonts.Helvetica);
const bold = await doc.embedFont(StandardFonts.HelveticaBold);
const form = doc.getForm();
for (let n = 1; n <= 3; n++) {
  const page = doc.addPage([612, 792]);
  page.drawText(n === 1 ? 'Service Agreement' : `Service Agreement, page ${n}`, { x: 72, y: 720, size: 18, font: bold });
  const lines =
    n === 1
      ? ['This agreement is made between the provider and the client named below.', 'The provider delivers the services described in the schedule.']
      : n === 2
        ? ['Fees are due within 30 days of each invoice.', 'Either party may end this agreement with 30 days of written notice.']
        : ['Signed for the client:'];
  lines.forEach((line, i) => page.drawText(line, { x: 72, y: 680 - i * 18, size: 11, font }));
  if (n === 1) {
    page.drawText('Client name:', { x: 72, y: 610, size: 11, font });
    const name = form.createTextField('client_name');
    name.addToPage(page, { x: 150, y: 604, width: 250, height: 20, font });
  }
  if (n === 3) page.drawText('{{Client signature;type=digital_signature;role=signer_1;required=true}}', { x: 72, y: 120, size: 9, font });
}
fs.mkdirSync(path.dirname(OUT), { recursive: true });
fs.writeFileSync(OUT, await doc.save({ useObjectStreams: false }));
console.log(`wrote ${path.relative(process.cwd(), OUT)} (${fs.statSync(OUT).size} bytes)`);
