// A policy file with no default export.
export const helper = 1;
