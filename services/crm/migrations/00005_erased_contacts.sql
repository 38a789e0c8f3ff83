-- An erased contact stays as a tombstone (docs/api/contacts.md §POST /contacts/{id}/erase): its id, workspace and
-- times, nothing else, so its deals keep their foreign key and the funnel its counts. Reads, lists and
-- the upsert never see it (no phone or e-mail is left for the unique indexes or the lookups).
alter table contacts drop constraint contacts_status_check;
alter table contacts add constraint contacts_status_check check (status in ('active', 'archived', 'erased'));
