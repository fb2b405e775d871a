-- The dashboard's history panel reads each queue's QueueStatus over the last hours. A partial index
-- holds those rows only, so the projector's writes of every other event cost nothing more.
CREATE INDEX events_queue_status ON events ((payload->>'name'), recorded_at) WHERE type = 'QueueStatus';
