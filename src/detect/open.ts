/**
 * How the detection opens a PDF with pdf.js: in its detection process (thread.ts) and in the data
 * set's reader (scripts/detect/read-form.ts), so that the model is trained on pages read exactly as
 * the service reads them.
 *
 * Images are not decoded. With `maxImageSize: 0` pdf.js leaves every image out of a page's operator
 * list instead of decoding it (and, as errors are not fatal, only warns). The detection reads rules,
 * boxes and text, never an image's pixels, and decoding them was the costliest part of reading
 * some pages: 15 % of the operator lists' time over ../shared/corpus, and a scanned page decodes to
 * tens of megabytes that the detection process would hold until the page is cleaned up.
 */
export const DETECTION_PDF_OPTIONS = {
  isEvalSupported: false,
  disableFontFace: true,
  useSystemFonts: false,
  stopAtErrors: false,
  maxImageSize: 0,
  verbosity: 0,
} as const;
