import { Type } from 'typebox';
import { Id, Nullable, Timestamp } from './common.js';
import { QuestionSchema, RuleSchema, SectionSchema } from './content.js';
import { DocumentSchema, FieldSchema } from './documents.js';
import { Form } from './forms.js';

export const PublishBody = Type.Object(
  {
    changesSummary: Type.Optional(
      Nullable(Type.String({ minLength: 1, maxLength: 1000, description: 'What changed, in your words; generated from the differences when omitted or null' })),
    ),
  },
  { additionalProperties: false },
);

const revisionFields = {
  id: Id,
  version: Type.Integer({ minimum: 1 }),
  publishedAt: Timestamp,
  publishedBy: Type.String({ description: 'Id of the API key that published' }),
  changesSummary: Type.String(),
};

export const FormRevision = Type.Object({ ...revisionFields, formId: Id }, { title: 'FormRevision' });
export const DocumentRevision = Type.Object({ ...revisionFields, documentId: Id }, { title: 'DocumentRevision' });

export const FormSnapshot = Type.Object(
  { form: Form, sections: Type.Array(SectionSchema), questions: Type.Array(QuestionSchema), rules: Type.Array(RuleSchema) },
  { description: 'The form as published, each object in the shape the API returns it' },
);
export const DocumentSnapshot = Type.Object(
  { document: DocumentSchema, fields: Type.Array(FieldSchema) },
  { description: 'The document as published, each object in the shape the API returns it' },
);

export const FormRevisionWithSnapshot = Type.Object({ ...revisionFields, formId: Id, snapshot: FormSnapshot });
export const DocumentRevisionWithSnapshot = Type.Object({ ...revisionFields, documentId: Id, snapshot: DocumentSnapshot });

export const PublishedForm = Type.Object({ form: Form, revision: FormRevision });
export const PublishedDocument = Type.Object({ document: DocumentSchema, revision: DocumentRevision });

export const RevisionParams = Type.Object({ id: Type.String(), version: Type.String() });
