-- The log keeps each event as the JSON it travelled as (json, not jsonb): Postgres stores the text
-- without re-parsing it into its binary form, which cost more than the rest of each event's row.
-- Queries read fields with ->> as before; none needs jsonb's operators or indexes.
ALTER TABLE events ALTER COLUMN payload TYPE json USING payload::json;
ALTER TABLE jobs ALTER COLUMN spec TYPE json USING spec::json;

-- Every job and pod row is updated as its pods move through their states: room on each page lets
-- Postgres update in place (a heap-only update, no new index entries) instead of moving the row.
ALTER TABLE jobs SET (fillfactor = 70);
ALTER TABLE pods SET (fillfactor = 70);
