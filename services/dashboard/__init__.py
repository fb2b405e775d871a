"""The dashboard: a read-only web view of the projection (queues, jobs and why, the GPU map, live decisions)."""
