/** One page of a list, as the store reads it. */
export interface Page {
  offset: number;
  limit: number;
}
