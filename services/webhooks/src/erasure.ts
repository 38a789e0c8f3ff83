/**
 * What a delivery's body keeps of an erased contact (docs/api/contacts.md §POST /contacts/{id}/erase): the body's
 * shape stays valid for its event's schema, so a pending delivery still goes out, and a receiver sees
 * the fields that were personal as empty.
 */

/** A contact with every personal field empty: what crm's tombstone would show, with the event's status. */
const ERASED_CONTACT = {
  name: null,
  phone: null,
  email: null,
  company: null,
  companyId: null,
  role: null,
  cpf: null,
  notes: null,
  tags: [],
  origin: null,
  customFields: {},
  url: null,
  utm: { source: null, medium: null, campaign: null, term: null, content: null },
};

/** The free texts a meeting carries about its contact. */
const ERASED_MEETING = {
  contactName: null,
  title: null,
  location: null,
  conferenceUrl: null,
  cancelReason: null,
};

type Body = { data?: Record<string, unknown> };

/**
 * The free text of a note or a task about the contact: crm deletes the notes and empties the tasks'
 * bodies, and the event log (which keeps internal events too) must not keep them either.
 */
const ERASED_TEXT = { body: null };

/** What an event's data keeps of an erased contact, by event type; undefined: nothing personal in it. */
function erasedFieldsOf(event: string): Record<string, unknown> | undefined {
  if (event === "contact.created" || event === "contact.updated") return ERASED_CONTACT;
  if (event.startsWith("meeting.")) return ERASED_MEETING;
  if (event === "note.created" || event.startsWith("task.")) return ERASED_TEXT;
  return undefined;
}

/** The contact an event's body carries personal data of, or undefined (deal events carry only its id). */
export function contactOf(event: string, data: Record<string, unknown> | undefined): string | undefined {
  if (event === "contact.created" || event === "contact.updated") return data?.id as string | undefined;
  if (erasedFieldsOf(event)) return data?.contactId as string | undefined;
  return undefined;
}

/** The body without `contactId`'s personal data; undefined when it carries none of it. */
export function redactBody(event: string, body: string, contactId: string): string | undefined {
  const parsed = JSON.parse(body) as Body;
  const erased = erasedFieldsOf(event);
  if (!parsed.data || !erased || contactOf(event, parsed.data) !== contactId) return undefined;
  return JSON.stringify({ ...parsed, data: { ...parsed.data, ...erased } });
}
