-- The row mapping used to camel-case the keys of every jsonb value it read, so a write that merged
-- customFields into what it had read (an upsert that filled, a PATCH) stored plan_type back as
-- planType. Each such key is renamed back to the fieldKey of the workspace's definition it came from,
-- with its value, unless the contact or deal holds that fieldKey too (then the later write kept it).

-- The mapping's own rule (postgres.js toCamel): an underscore goes, the character after it is upper-cased.
create function pg_temp.camel(k text) returns text language plpgsql immutable as $$
declare
  out text := left(k, 1);
  i int := 2;
begin
  while i <= length(k) loop
    if substr(k, i, 1) = '_' then
      out := out || upper(substr(k, i + 1, 1));
      i := i + 2;
    else
      out := out || substr(k, i, 1);
      i := i + 1;
    end if;
  end loop;
  return out;
end $$;

-- A camel-cased form that is itself a definition's fieldKey is a key of its own: left as it is.
create temporary table renamed_keys on commit drop as
  select d.workspace_id, d.entity, d.field_key, pg_temp.camel(d.field_key) as camel
  from custom_field_defs d
  where pg_temp.camel(d.field_key) <> d.field_key
    and not exists (
      select 1 from custom_field_defs o
      where o.workspace_id = d.workspace_id and o.entity = d.entity and o.field_key = pg_temp.camel(d.field_key));

-- An UPDATE … FROM changes a row once even when several keys of it match: again until none is left.
do $$
begin
  loop
    update contacts c
      set custom_fields = (c.custom_fields - r.camel) || jsonb_build_object(r.field_key, c.custom_fields -> r.camel)
      from renamed_keys r
      where r.entity = 'contact' and c.workspace_id = r.workspace_id
        and c.custom_fields ? r.camel and not c.custom_fields ? r.field_key;
    exit when not found;
  end loop;
  loop
    update opportunities o
      set custom_fields = (o.custom_fields - r.camel) || jsonb_build_object(r.field_key, o.custom_fields -> r.camel)
      from renamed_keys r
      where r.entity = 'opportunity' and o.workspace_id = r.workspace_id
        and o.custom_fields ? r.camel and not o.custom_fields ? r.field_key;
    exit when not found;
  end loop;
end $$;

drop function pg_temp.camel(text);
