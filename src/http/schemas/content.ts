import { Type } from 'typebox';
import { OPERATORS } from '../../domain/logic.js';
import { PRIORITIES, QUESTION_TYPES } from '../../domain/questions.js';
import { Id, Nullable, OneOf, Order, Timestamp } from './common.js';

const FreeOptions = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Per-type options (see API.md); keys in snake_case, camelCase accepted; unknown keys are refused',
});
const NullableId = Nullable(Type.String());

export const SectionSchema = Type.Object(
  { id: Id, formId: Id, title: Type.String(), description: Nullable(Type.String()), order: Type.Integer(), createdAt: Timestamp, updatedAt: Timestamp },
  { title: 'Section' },
);
export const QuestionSchema = Type.Object(
  {
    id: Id,
    formId: Id,
    sectionId: Nullable(Id),
    questionText: Type.String(),
    description: Nullable(Type.String()),
    type: OneOf(QUESTION_TYPES),
    isRequired: Type.Boolean(),
    isPii: Type.Boolean(),
    priority: OneOf(PRIORITIES),
    context: Nullable(Type.String()),
    options: Type.Record(Type.String(), Type.Unknown()),
    order: Type.Integer(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'Question' },
);
const ConditionSchema = Type.Object(
  { sourceQuestionId: Type.String(), operator: OneOf(OPERATORS), value: Type.Optional(Type.Unknown()) },
  { additionalProperties: false },
);
export const RuleSchema = Type.Object(
  {
    id: Id,
    formId: Id,
    action: OneOf(['show', 'hide'] as const),
    targetQuestionId: Nullable(Id),
    targetSectionId: Nullable(Id),
    match: OneOf(['all', 'any'] as const),
    conditions: Type.Array(Type.Object({ sourceQuestionId: Id, operator: OneOf(OPERATORS), value: Type.Unknown() })),
    order: Type.Integer(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'Rule' },
);

const questionBody = {
  questionText: Type.String({ minLength: 1, maxLength: 1000 }),
  description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  type: OneOf(QUESTION_TYPES),
  isRequired: Type.Optional(Type.Boolean()),
  isPii: Type.Optional(Type.Boolean()),
  priority: Type.Optional(OneOf(PRIORITIES)),
  context: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  options: Type.Optional(FreeOptions),
  sectionId: Type.Optional(NullableId),
  order: Type.Optional(Order),
};
export const CreateQuestionBody = Type.Object(questionBody, { additionalProperties: false });
export const UpdateQuestionBody = Type.Object(
  { ...questionBody, questionText: Type.Optional(questionBody.questionText), type: Type.Optional(questionBody.type) },
  { additionalProperties: false },
);

const sectionBody = {
  title: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
  order: Type.Optional(Order),
};
export const CreateSectionBody = Type.Object(sectionBody, { additionalProperties: false });
export const UpdateSectionBody = Type.Object({ ...sectionBody, title: Type.Optional(sectionBody.title) }, { additionalProperties: false });

export const RuleBody = Type.Object(
  {
    action: Type.Optional(OneOf(['show', 'hide'] as const)),
    targetQuestionId: Type.Optional(NullableId),
    targetSectionId: Type.Optional(NullableId),
    match: Type.Optional(OneOf(['all', 'any'] as const)),
    conditions: Type.Optional(Type.Array(ConditionSchema, { minItems: 1, maxItems: 20 })),
    sourceQuestionId: Type.Optional(Type.String()),
    operator: Type.Optional(OneOf(OPERATORS)),
    value: Type.Optional(Type.Unknown()),
    order: Type.Optional(Order),
  },
  { additionalProperties: false, description: 'Short form (sourceQuestionId, operator, value) or full form (match, conditions)' },
);

export const EvaluateBody = Type.Object(
  {
    answers: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Answers by question id' })),
    version: Type.Optional(Type.Number({ description: 'A published revision; the draft when omitted; one that does not exist (or is not a positive integer) is 404' })),
  },
  { additionalProperties: false },
);
export const EvaluationSchema = Type.Object({
  visibleQuestionIds: Type.Array(Id),
  hiddenQuestionIds: Type.Array(Id),
  visibleSectionIds: Type.Array(Id),
  hiddenSectionIds: Type.Array(Id),
  missingRequiredQuestionIds: Type.Array(Id),
});

export const QuestionParams = Type.Object({ id: Type.String(), qid: Type.String() });
export const SectionParams = Type.Object({ id: Type.String(), sid: Type.String() });
export const RuleParams = Type.Object({ id: Type.String(), rid: Type.String() });
