/**
 * How the detection opens a PDF with pdf.js: in its detection process (thread.ts) and in the data
 * set's reader (scripts/detect/read-form.ts), so that the model is trained on pages read exactly as
 * the service reads them.
 *
 * Images are not decoded. With `maxImageSize: 0` pdf.js leaves every image out of a page's operator
 * list instead of decoding it (and, as errors are not fatal, only warns). Image masks go too (pdf.js
 * checks the size first), among them the one-pixel masks some producers stretch into bars, and an
 * image inside a Type3 glyph empties that glyph's own operator list. The detection reads none of
 * these: its rules and boxes are paths (layout-page.ts), and its text comes from `showText` and
 * the fonts' metrics (page-text.ts), never from glyph drawings. All 1,473 pages of the data set
 * read the same with and without. Decoding the images was 5 to 6 % of the operator lists' time over
 * ../shared/corpus, much more on a page with a large image. A scanned A4 page at 300 dpi decodes to
 * 26 MB, which the detection process would hold until the page was cleaned up.
 */
export const DETECTION_PDF_OPTIONS = {
  isEvalSupported: false,
  disableFontFace: true,
  useSystemFonts: false,
  stopAtErrors: false,
  maxImageSize: 0,
  verbosity: 0,
} as const;
