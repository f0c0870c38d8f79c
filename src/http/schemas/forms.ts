import { Type } from 'typebox';
import { paginationQuery } from '../pagination.js';
import { Id, Nullable, Status, Timestamp } from './common.js';

const Settings = Type.Record(Type.String(), Type.Unknown(), { description: 'Free JSON object, at most 64 KiB, kept as given.' });
const Title = Type.String({ minLength: 1, maxLength: 200 });
const Description = Nullable(Type.String({ maxLength: 1000 }));

export const Form = Type.Object(
  {
    id: Id,
    workspaceId: Id,
    title: Type.String(),
    description: Nullable(Type.String()),
    status: Status,
    settings: Settings,
    currentVersion: Nullable(Type.Integer({ minimum: 1 })),
    hasUnpublishedChanges: Type.Boolean(),
    questionCount: Type.Integer({ minimum: 0 }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'Form' },
);

export const CreateFormBody = Type.Object(
  {
    title: Title,
    description: Type.Optional(Description),
    settings: Type.Optional(Settings),
    status: Type.Optional(Type.Literal('draft', { description: 'A new form is always a draft.' })),
  },
  { additionalProperties: false },
);

export const UpdateFormBody = Type.Object(
  {
    title: Type.Optional(Title),
    description: Type.Optional(Description),
    settings: Type.Optional(Settings),
    status: Type.Optional(Status),
  },
  { additionalProperties: false },
);

export const ListFormsQuery = Type.Object(
  { ...paginationQuery, status: Type.Optional(Status) },
  { additionalProperties: false },
);
