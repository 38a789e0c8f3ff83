/** Empty strings are stored as null (docs/api/contacts.md §Contact): one meaning of "blank" for every field. */
export const present = (v: string | null | undefined): v is string =>
  typeof v === "string" && v.trim() !== "";
export const nullIfBlank = (v: string | null | undefined): string | null => (present(v) ? v : null);
