"""The queue a workload goes to when it names none: the podgrouper assigns it, and a system with
no queues creates it."""

DEFAULT_QUEUE = "default-queue"
