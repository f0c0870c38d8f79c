import type { OptionRule } from '../../domain/question-options.js';
import { optionRulesOf, QUESTION_TYPE_SPECS } from '../../domain/question-types.js';
import { QUESTION_TYPES, type QuestionType } from '../../domain/questions.js';
import { CreateQuestionBody, QuestionSchema } from './content.js';

/**
 * The OpenAPI document's account of question options, one schema per type, made from the types'
 * descriptors (src/domain/question-types.ts), so the document says what the service checks:
 * `components.schemas.<Type>Options`, and `Question` / `CreateQuestion` as a `oneOf` over the
 * types discriminated by `type`. The routes validate and serialise with the plain schemas of
 * `content.ts` (one shape, and the service's own hints for bad options); this only rewrites the
 * document (`documentQuestionTypes`, from the swagger `transformObject`).
 */
type Json = Record<string, unknown>;

const pascal = (type: string) => type.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

function ruleSchema(rule: OptionRule): Json {
  const withDefault = (schema: Json, value: unknown) => (value === undefined ? schema : { ...schema, default: value });
  switch (rule.kind) {
    case 'int':
      return withDefault({ type: 'integer', ...(rule.min !== undefined ? { minimum: rule.min } : {}), ...(rule.max !== undefined ? { maximum: rule.max } : {}) }, rule.default);
    case 'number':
      return withDefault({ type: 'number', ...(rule.positive ? { exclusiveMinimum: 0 } : {}), ...(rule.min !== undefined ? { minimum: rule.min } : {}) }, rule.default);
    case 'text':
      return { type: 'string', maxLength: rule.maxLength, ...(rule.pattern ? { pattern: rule.pattern.test.source, description: `Must be ${rule.pattern.says}.` } : {}) };
    case 'bool':
      return withDefault({ type: 'boolean' }, rule.default);
    case 'enum':
      return withDefault({ enum: [...rule.values] }, rule.default);
    case 'list':
      return {
        type: 'array',
        items: { type: 'string', minLength: 1, maxLength: 500, ...(rule.item ? { pattern: rule.item.test.source, description: `Each must be ${rule.item.says}.` } : {}) },
        minItems: rule.minItems,
        maxItems: rule.maxItems,
        ...(rule.distinct ? { uniqueItems: true } : {}),
      };
    case 'date':
      return { type: 'string', format: 'date' };
    case 'currency':
      return withDefault({ type: 'string', pattern: '^[A-Z]{3}$', description: 'ISO 4217 currency code' }, rule.default);
    case 'pictures':
      return {
        type: 'array',
        minItems: 1,
        maxItems: 100,
        items: {
          type: 'object',
          properties: { label: { type: 'string', minLength: 1, maxLength: 500 }, image_url: { type: 'string', format: 'uri', maxLength: 2000 } },
          required: ['label'],
          additionalProperties: false,
        },
      };
    case 'subset':
      return { type: 'array', items: { enum: [...rule.values] }, minItems: 1, uniqueItems: true, default: [...rule.default] };
    case 'formula':
      return {
        type: 'string',
        minLength: 1,
        maxLength: 2000,
        description: 'Arithmetic with + - * / and parentheses over {{<question id>}} or {{<question text>}} of number-like questions of the form',
      };
    case 'scores':
      return { type: 'object', additionalProperties: { type: 'number', minimum: 0 }, minProperties: 1, description: 'Points by choice label' };
  }
}

/** `<Type>Options`: the options of one type, keys as stored and returned (camelCase spellings are accepted on input too). */
function optionsSchema(type: QuestionType): Json {
  const rules = optionRulesOf(type);
  const required = Object.entries(rules).filter(([, rule]) => 'required' in rule && rule.required).map(([name]) => name);
  const spec = QUESTION_TYPE_SPECS[type];
  return {
    type: 'object',
    title: `${pascal(type)}Options`,
    description: `Options of a ${type} question${spec.quiz ? ' (with its quiz options)' : ''}; keys in snake_case as shown (the camelCase spelling of each is accepted on input), defaults filled in.`,
    properties: Object.fromEntries(Object.entries(rules).map(([name, rule]) => [name, ruleSchema(rule)])),
    ...(required.length ? { required } : {}),
    additionalProperties: false,
  };
}

function variants(base: Json, prefix: string, requireOptions: boolean): { schemas: Json; oneOf: Json[]; mapping: Record<string, string> } {
  const properties = base.properties as Json;
  const schemas: Json = {};
  const oneOf: Json[] = [];
  const mapping: Record<string, string> = {};
  for (const type of QUESTION_TYPES) {
    const name = `${prefix}${pascal(type)}`;
    const hasRequired = Object.values(optionRulesOf(type)).some((rule) => 'required' in rule && rule.required);
    const required = [...new Set([...((base.required as string[]) ?? []), 'type', ...(requireOptions || hasRequired ? ['options'] : [])])];
    schemas[name] = {
      ...base,
      title: name,
      properties: { ...properties, type: { type: 'string', const: type }, options: ref(`${pascal(type)}Options`) },
      required,
    };
    oneOf.push(ref(name));
    mapping[type] = `#/components/schemas/${name}`;
  }
  return { schemas, oneOf, mapping };
}

/** The component schemas this module adds. */
export function questionTypeComponents(): Json {
  const json = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as Json;
  const options = Object.fromEntries(QUESTION_TYPES.map((type) => [`${pascal(type)}Options`, optionsSchema(type)]));
  const answers = variants(json(QuestionSchema), 'Question', true);
  const creates = variants(json(CreateQuestionBody), 'CreateQuestion', false);
  return {
    ...options,
    ...answers.schemas,
    ...creates.schemas,
    Question: { title: 'Question', oneOf: answers.oneOf, discriminator: { propertyName: 'type', mapping: answers.mapping } },
    CreateQuestion: { title: 'CreateQuestion', oneOf: creates.oneOf, discriminator: { propertyName: 'type', mapping: creates.mapping } },
    QuestionOptions: {
      title: 'QuestionOptions',
      description: "Options of the question's type: its current type, or `type` when sent with them",
      anyOf: QUESTION_TYPES.map((type) => ref(`${pascal(type)}Options`)),
    },
  };
}

/**
 * Rewrites an OpenAPI document in place: every `Question` becomes a reference to the `oneOf`
 * over types, the create body a reference to `CreateQuestion`, the update body's `options` a
 * reference to `QuestionOptions`.
 */
export function documentQuestionTypes(spec: { paths?: Json; components?: Json }): void {
  const components = (spec.components ??= {}) as Json;
  components.schemas = { ...((components.schemas as Json | undefined) ?? {}), ...questionTypeComponents() };
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object') return node;
    const object = node as Json;
    if (object.title === 'Question' && object.properties) return ref('Question');
    if (object.title === 'CreateQuestion' && object.properties) return ref('CreateQuestion');
    if (object.title === 'UpdateQuestion' && object.properties) {
      return { ...object, properties: { ...(object.properties as Json), options: ref('QuestionOptions') } };
    }
    for (const key of Object.keys(object)) object[key] = walk(object[key]);
    return object;
  };
  if (spec.paths) walk(spec.paths);
}
