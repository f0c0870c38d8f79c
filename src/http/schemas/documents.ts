import { Type } from 'typebox';
import { paginationQuery } from '../pagination.js';
import { DIRECTIONS, FIELD_TYPES } from '../../domain/fields.js';
import { Id, Nullable, OneOf, Order, Status, Timestamp } from './common.js';
export { IdParams as DocumentParams } from './common.js';

const FieldTypeSchema = OneOf(FIELD_TYPES);
const DirectionSchema = OneOf(DIRECTIONS);
const Fraction = Type.Number({ minimum: 0, maximum: 1 });
/** A box's width or height: more than 0 (API.md, Document fields). */
const Extent = Type.Number({ exclusiveMinimum: 0, maximum: 1 });
const FieldOptions = Type.Object(
  { choices: Type.Optional(Type.Array(Type.String({ maxLength: 500 }), { minItems: 1, maxItems: 500 })) },
  { additionalProperties: false },
);
const Label = Type.String({ minLength: 1, maxLength: 200 });
const Role = Nullable(Type.String({ minLength: 1, maxLength: 100 }));
const DefaultValue = Nullable(Type.String({ maxLength: 1000 }));

export const PageDimension = Type.Object({ width: Type.Number(), height: Type.Number() });

export const DocumentSchema = Type.Object(
  {
    id: Id,
    workspaceId: Id,
    title: Type.String(),
    status: Status,
    originalFilename: Type.String(),
    fileType: OneOf(['pdf', 'docx'] as const),
    sizeBytes: Type.Integer({ minimum: 0 }),
    sha256: Type.String(),
    pageCount: Type.Integer({ minimum: 1 }),
    pageDimensions: Type.Array(PageDimension),
    pageSource: OneOf(['pdf', 'rendition', 'docx_metadata'] as const, {
      description: 'Where the page count and sizes come from: the PDF, the LibreOffice rendition of a DOCX, or docProps/app.xml of a DOCX',
    }),
    currentVersion: Nullable(Type.Integer({ minimum: 1 })),
    hasUnpublishedChanges: Type.Boolean(),
    originalUrl: Type.String(),
    downloadUrl: Type.Optional(
      Type.String({
        description: 'An absolute URL of the same bytes that needs no key, made at each read and valid for DOWNLOAD_URL_EXPIRES_S (15 minutes by default); a presigned URL when files are in S3. Left out of revision snapshots.',
      }),
    ),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'Document' },
);

export const FileQuery = Type.Object(
  {
    // Not constrained here: a malformed value is a tampered URL, answered 403 invalid_signature by the handler, not 400.
    expires: Type.Optional(Type.String({ description: 'Of a signed downloadUrl: when it stops working (Unix seconds)' })),
    signature: Type.Optional(Type.String({ description: 'Of a signed downloadUrl: its signature; with it (or with expires), no API key is needed, and a malformed, wrong or expired one is 403 invalid_signature' })),
  },
  { additionalProperties: false },
);

export const FieldSchema = Type.Object(
  {
    id: Id,
    documentId: Id,
    label: Type.String(),
    type: FieldTypeSchema,
    pageNumber: Type.Integer({ minimum: 1 }),
    x: Type.Number(),
    y: Type.Number(),
    width: Type.Number(),
    height: Type.Number(),
    isRequired: Type.Boolean(),
    isReadOnly: Type.Boolean(),
    assigneeRole: Nullable(Type.String()),
    defaultValue: Nullable(Type.String()),
    direction: DirectionSchema,
    options: Type.Object({ choices: Type.Optional(Type.Array(Type.String())) }),
    order: Type.Integer({ minimum: 0 }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'DocumentField' },
);

export const DocumentWithFields = Type.Intersect([DocumentSchema, Type.Object({ fields: Type.Array(FieldSchema) })]);

const fieldProperties = {
  label: Type.Optional(Label),
  type: FieldTypeSchema,
  pageNumber: Type.Integer({ minimum: 1 }),
  x: Fraction,
  y: Fraction,
  width: Extent,
  height: Extent,
  isRequired: Type.Optional(Type.Boolean()),
  isReadOnly: Type.Optional(Type.Boolean()),
  assigneeRole: Type.Optional(Role),
  defaultValue: Type.Optional(DefaultValue),
  direction: Type.Optional(DirectionSchema),
  options: Type.Optional(FieldOptions),
};

export const CreateFieldBody = Type.Object({ ...fieldProperties, order: Type.Optional(Order) }, { additionalProperties: false });
export const BulkFieldItem = Type.Object(fieldProperties, { additionalProperties: false });
export const BulkFieldsBody = Type.Object(
  { fields: Type.Array(BulkFieldItem, { minItems: 1, maxItems: 500 }) },
  { additionalProperties: false },
);
/** Every key of a field, all optional: `PUT` changes only what it is given. */
export const UpdateFieldBody = Type.Partial(CreateFieldBody, { additionalProperties: false });

export const UpdateDocumentBody = Type.Object(
  { title: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), status: Type.Optional(Status) },
  { additionalProperties: false },
);

export const ListDocumentsQuery = Type.Object({ ...paginationQuery, status: Type.Optional(Status) }, { additionalProperties: false });
export const FieldParams = Type.Object({ id: Type.String(), fid: Type.String() });
