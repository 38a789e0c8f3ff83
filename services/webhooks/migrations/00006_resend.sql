-- Resend and recover (docs/api/webhooks.md §Resend and recover) start a new series of attempts of a
-- delivery that is not pending: the same row, the same event id and body, under a job of its own.
-- retry_from: the attempts made before the current series (the retry schedule counts from there, the
-- attempts column keeps counting them all).
alter table deliveries add column retry_from int not null default 0;
-- queued_job: the job that now owns the delivery, set only by a resend or a recover (null: the job of
-- its fan-out). A job that finds another job named here drops the delivery, so a job queued before the
-- delivery died (the breaker's, waiting for its retry) can never send it beside the new one.
alter table deliveries add column queued_job text;
