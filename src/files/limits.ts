/** More pages than any contract has: a larger count is a forged or broken file (422). */
export const MAX_PAGES = 10_000;
