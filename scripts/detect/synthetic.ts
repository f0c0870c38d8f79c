/**
 * Synthetic training pages for the learned layout detector: sparse forms drawn with pdf-lib whose
 * fields are known because they are drawn here — fill-in lines after a label (one or two on a
 * line, labels in several languages, with or without a colon, rules of 0.5–1.5 pt), boxes with
 * their label above them or small inside their top, check boxes before or after option words,
 * signature lines, and paragraphs and headings that are no field; and on about half the pages a
 * shaded band holding white boxes with no outline under small labels, or white squares before
 * option words (forms printed on grey or coloured bands; `readPage` reads such white boxes).
 *
 * Why: the real forms of ../shared are dense; a page holding a single labelled line, or two check
 * boxes, looks like nothing the model learned from, and its scores there were left to chance (a lone
 * "Name" line scored 0.38 against a threshold of 0.32 with one training, 0.21 against 0.35 with
 * another). These pages are **training only**: train.py never puts them in a fold, never scores,
 * calibrates or thresholds on them, and bench:detect leaves them out of every figure.
 *
 * Deterministic: a seeded generator (mulberry32) gives the same pages on every run. Nothing here
 * copies a test's page: sizes, words, positions and layouts are drawn at random.
 */
import { PDFDocument, rgb, StandardFonts } from '@cantoo/pdf-lib';
import type { DataForm, TruthBox } from './dataset.js';
import { readForm } from './read-form.js';

/** The repository name of the synthetic forms (never a fold: see train.py). */
export const SYNTHETIC_REPO = 'synthetic';
export const SYNTHETIC_FORMS = 160;
/** The name of the i-th synthetic form (its data-set file is `synth--<name>.json`). */
export const syntheticName = (i: number) => `synthetic-${String(i).padStart(3, '0')}`;
const SEED = 1;

const TEXT = ['Name', 'Full name', 'First name', 'Last name', 'Address', 'Street', 'City', 'State', 'ZIP code', 'Postcode', 'Country', 'Phone', 'Telephone', 'Mobile', 'Email', 'E-mail address', 'Date', 'Date of birth', 'Company', 'Employer', 'Occupation', 'Position', 'Title', 'Department', 'Nationality', 'Amount', 'Total amount', 'Account number', 'Reference', 'Member number', 'Place', 'Comments', 'Vorname', 'Nachname', 'Straße', 'Ort', 'PLZ', 'Telefon', 'Datum', 'Geburtsdatum', 'Nom', 'Prénom', 'Adresse', 'Ville', 'Téléphone', 'Date de naissance', 'Nombre', 'Apellidos', 'Dirección', 'Teléfono', 'Fecha', 'Correo', 'Imię', 'Nazwisko', 'Adres', 'Nome', 'Cognome', 'Indirizzo'];
const SIGN = ['Signature', 'Signed', 'Applicant signature', 'Unterschrift', 'Signé', 'Firma', 'Podpis', 'Assinatura', 'Handtekening'];
const OPTIONS = [['Yes', 'No'], ['Male', 'Female'], ['Oui', 'Non'], ['Ja', 'Nein'], ['Sí', 'No'], ['Single', 'Married', 'Divorced', 'Widowed'], ['Full-time', 'Part-time'], ['Cash', 'Cheque', 'Card'], ['Tak', 'Nie'], ['Daily', 'Weekly', 'Monthly']];
const QUESTIONS = ['Are you a resident of this state?', 'Do you smoke?', 'Gender', 'Marital status', 'Have you applied before?', 'Payment method', 'Sind Sie versichert?', 'Êtes-vous salarié ?', 'Employment', 'Frequency'];
const TITLES = ['Application form', 'Membership application', 'Registration', 'Antrag', 'Formulaire', 'Solicitud'];
const SENTENCE =
  'The applicant declares that the information given in this form is true and complete to the best of their knowledge and belief, and agrees to inform the office of any change.';

function generator(seed: number) {
  let state = seed | 0;
  const next = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]!, between: (a: number, b: number) => a + next() * (b - a) };
}

type Rng = ReturnType<typeof generator>;

/** One synthetic form (1–2 Letter pages): its PDF and each page's truth boxes. */
async function drawForm(rng: Rng, bands: Rng): Promise<{ bytes: Uint8Array; truth: TruthBox[][] }> {
  const { next, pick, between } = rng;
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const pages = 1 + Math.floor(next() * 2);
  const truth: TruthBox[][] = [];
  for (let p = 0; p < pages; p++) {
    const page = doc.addPage([612, 792]);
    const boxes: TruthBox[] = [];
    // A field from x1 to x2, `h` tall above `bottom` (PDF user space), as a displayed fraction.
    const add = (x1: number, bottom: number, x2: number, h: number, cls: TruthBox['cls']) =>
      boxes.push({ rect: { x: x1 / 612, y: (792 - bottom - h) / 792, width: (x2 - x1) / 612, height: h / 792 }, cls, type: cls });
    const text = (str: string, x: number, y: number, size: number) => page.drawText(str, { x, y, size, font });
    let y = between(680, 750);
    if (next() < 0.6) {
      text(pick(TITLES), 72, y, between(13, 18));
      y -= between(30, 50);
    }
    const blocks = 1 + Math.floor(next() * 3);
    for (let b = 0; b < blocks && y > 120; b++) {
      const kind = next();
      const s = between(8, 12);
      if (kind < 0.5) {
        // Fill-in lines: the field is a line's height over the rule, from the rule's start to its end.
        const n = 1 + Math.floor(next() * 6);
        const colon = next() < 0.5 ? ':' : '';
        const lx = between(50, 100);
        const aligned = next() < 0.5;
        const column = lx + between(90, 160);
        const thickness = pick([0.5, 0.75, 1, 1.5]);
        const step = between(22, 40);
        for (let i = 0; i < n && y > 80; i++) {
          const sign = next() < 0.12;
          const label = (sign ? pick(SIGN) : pick(TEXT)) + colon;
          const end = lx + font.widthOfTextAtSize(label, s);
          const x1 = aligned ? Math.max(column, end + 4) : end + between(3, 25);
          const two = !sign && next() < 0.25;
          const x2 = two ? Math.min(x1 + between(80, 180), 330) : Math.min(between(x1 + 90, 560), 560);
          if (x2 - x1 < 40) continue; // no room for a line: nothing drawn (never with these ranges)
          text(label, lx, y, s);
          page.drawLine({ start: { x: x1, y: y - 2 }, end: { x: x2, y: y - 2 }, thickness });
          add(x1, y - 2, x2, s * 1.4, sign ? 'signature' : 'text');
          if (two) {
            const second = pick(TEXT) + colon;
            const sx = x2 + between(10, 25);
            text(second, sx, y, s);
            const a = sx + font.widthOfTextAtSize(second, s) + between(3, 15);
            const z = Math.min(a + between(60, 200), 560);
            if (z - a >= 40) {
              page.drawLine({ start: { x: a, y: y - 2 }, end: { x: z, y: y - 2 }, thickness });
              add(a, y - 2, z, s * 1.4, 'text');
            }
          }
          y -= step;
        }
      } else if (kind < 0.62) {
        // Boxes: the label above a box (the field is the box) or small inside its top (the field is
        // the box below the label); in a row or a column.
        const n = 1 + Math.floor(next() * 3);
        const inRow = next() < 0.5;
        const h = next() < 0.6 ? between(18, 30) : between(40, 90);
        const w = inRow ? between(120, 220) : between(200, 480);
        const inside = next() < 0.5;
        let x = 72;
        const top = y;
        for (let i = 0; i < n; i++) {
          const label = pick(next() < 0.1 ? SIGN : TEXT);
          const boxTop = inRow ? top : y;
          if (boxTop - h < 60 || x + w > 560) break;
          const size = inside ? between(6, 8) : s;
          if (!inside) text(label, x, boxTop + 3, size);
          page.drawRectangle({ x, y: boxTop - h, width: w, height: h, borderWidth: pick([0.5, 0.75, 1]), borderColor: rgb(0, 0, 0) });
          if (inside) text(label, x + 2, boxTop - size - 1, size);
          const fieldTop = inside ? boxTop - size * 1.4 - 1 : boxTop;
          add(x, boxTop - h, x + w, fieldTop - (boxTop - h), SIGN.includes(label) ? 'signature' : 'text');
          if (inRow) x += w + between(10, 30);
          else y -= h + (inside ? between(8, 20) : s + between(10, 20));
        }
        y = inRow ? top - h - between(25, 40) : y - between(10, 20);
        continue;
      } else if (kind < 0.82) {
        // Check boxes: a question, then option words with a drawn square before (or after) each.
        const question = pick(QUESTIONS);
        const options = pick(OPTIONS);
        const side = between(7, 11);
        const vertical = next() < 0.3;
        const before = next() < 0.75;
        text(question, 72, y, s);
        let x = vertical ? 90 : 72 + font.widthOfTextAtSize(question, s) + between(15, 40);
        if (vertical) y -= s * 1.8;
        for (const option of options) {
          if (x > 520) break;
          const width = font.widthOfTextAtSize(option, s);
          const bx = before ? x : x + width + 4;
          const by = y - (side - s * 0.7) / 2;
          page.drawRectangle({ x: bx, y: by, width: side, height: side, borderWidth: pick([0.5, 0.75, 1]), borderColor: rgb(0, 0, 0) });
          text(option, before ? x + side + between(3, 6) : x, y, s);
          add(bx, by, bx + side, side, 'checkbox');
          if (vertical) y -= s * 1.8;
          else x += side + width + between(20, 40);
        }
        y -= between(24, 40);
      } else {
        // Running text: no field.
        const n = 2 + Math.floor(next() * 5);
        for (let i = 0; i < n && y > 80; i++) {
          const from = Math.floor(next() * 40);
          text(SENTENCE.slice(from, from + 70 + Math.floor(next() * 20)), 72, y, s);
          y -= s * 1.4;
        }
        y -= between(15, 30);
      }
    }
    // A shaded band holding white boxes with no outline (the fields) and white squares before
    // option words, from a stream of its own so that the blocks above are drawn the same.
    if (bands.next() < 0.5 && y > 140) {
      const s = bands.between(8, 11);
      const grey = bands.between(0.78, 0.93);
      const rows = 1 + Math.floor(bands.next() * 3);
      const rowH = bands.between(24, 34);
      const top = y + s;
      const bottom = top - rows * rowH - 8;
      page.drawRectangle({ x: 50, y: bottom, width: 512, height: top - bottom, color: rgb(grey, grey, grey) });
      for (let r = 0; r < rows; r++) {
        const base = top - (r + 1) * rowH;
        let x = 58;
        if (bands.next() < 0.7) {
          // Labels above white boxes, one to three on the row.
          const n = 1 + Math.floor(bands.next() * 3);
          const w = (496 - (n - 1) * 8) / n;
          for (let i = 0; i < n; i++) {
            text(bands.pick(TEXT), x, base + rowH - s - 1, s * 0.85);
            const h = rowH - s * 0.85 - 6;
            page.drawRectangle({ x, y: base + 2, width: w, height: h, color: rgb(1, 1, 1) });
            add(x, base + 2, x + w, h, 'text');
            x += w + 8;
          }
        } else {
          // A question and white squares before its options.
          const question = bands.pick(QUESTIONS);
          text(question, x, base + rowH / 2 - s / 3, s);
          x += font.widthOfTextAtSize(question, s) + bands.between(15, 30);
          const side = bands.between(7, 11);
          for (const option of bands.pick(OPTIONS)) {
            const width = font.widthOfTextAtSize(option, s);
            if (x + side + width > 550) break;
            const by = base + rowH / 2 - s / 3 - (side - s * 0.7) / 2;
            page.drawRectangle({ x, y: by, width: side, height: side, color: rgb(1, 1, 1) });
            add(x, by, x + side, side, 'checkbox');
            text(option, x + side + 4, base + rowH / 2 - s / 3, s);
            x += side + width + bands.between(20, 35);
          }
        }
      }
      y = bottom - bands.between(20, 35);
    }
    truth.push(boxes);
  }
  return { bytes: await doc.save(), truth };
}

/** The synthetic forms, read as dataset.ts reads a real one (read-form.ts). */
export async function syntheticForms(count = SYNTHETIC_FORMS, seed = SEED): Promise<DataForm[]> {
  const rng = generator(seed);
  const bands = generator(seed + 7919);
  const forms: DataForm[] = [];
  for (let f = 0; f < count; f++) {
    const { bytes, truth } = await drawForm(rng, bands);
    const pages = (await readForm(bytes)).map((graphics, i) => ({ pageNumber: i + 1, graphics, truth: truth[i]! }));
    forms.push({ set: 'synth', name: syntheticName(f), repo: SYNTHETIC_REPO, kind: 'synthetic', language: 'multi', producerFamily: 'pdf-lib', pages });
  }
  return forms;
}
