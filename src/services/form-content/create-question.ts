import { isoNow } from '../../domain/clock.js';
import { newId } from '../../domain/ids.js';
import type { Priority, QuestionType } from '../../domain/questions.js';
import { contentSiblings, insertQuestion, toQuestion, type QuestionView } from '../../store/form-content.js';
import { clampPosition, openGap } from '../../store/ordering.js';
import type { FormQuestionRow } from '../../store/schema.js';
import type { Deps, Principal } from '../deps.js';
import { assertFormulas, assertQuestionSize, assertRoom, checkQuestion, editFormDraft, questionColumns } from './form-draft.js';

export interface QuestionInput {
  questionText?: string;
  description?: string | null;
  type?: QuestionType;
  isRequired?: boolean;
  isPii?: boolean;
  priority?: Priority;
  context?: string | null;
  options?: Record<string, unknown>;
  sectionId?: string | null;
  order?: number;
}

/** `POST /forms/{id}/questions`: its options checked against its type and the form's other questions. */
export async function createQuestion(
  deps: Deps,
  principal: Principal,
  { formId, question: input }: { formId: string; question: QuestionInput & { questionText: string; type: QuestionType } },
): Promise<QuestionView> {
  return editFormDraft(deps, principal.workspaceId, formId, async (trx, content) => {
    const merged = {
      sectionId: input.sectionId ?? null,
      questionText: input.questionText,
      description: input.description ?? null,
      type: input.type,
      isRequired: input.isRequired ?? false,
      isPii: input.isPii ?? false,
      priority: input.priority ?? 'medium',
      context: input.context ?? null,
      options: {},
    };
    assertRoom('questions', content.questions.length);
    const id = newId();
    const options = checkQuestion(merged, content, id, input.options);
    const position = clampPosition(input.order, content.questions.length);
    await openGap(trx, contentSiblings('form_questions', formId), position);
    const now = isoNow(deps.clock);
    const row: FormQuestionRow = {
      id,
      form_id: formId,
      ...questionColumns(merged, options),
      position,
      created_at: now,
      updated_at: now,
    };
    const view = toQuestion(row);
    assertQuestionSize(view);
    // A new question's text may make a formula's {{text}} name two questions.
    assertFormulas([...content.questions, view], 'questionText');
    await insertQuestion(trx, row);
    return view;
  });
}
