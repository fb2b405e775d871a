"""What a request to a NATS server that is restarting (or not back yet) ends with: worth asking again.

A leaf module, so that anything that talks to the server (the bus, snapshot stores, leases) can
catch the same errors without importing the bus.
"""

from __future__ import annotations

from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import NoStreamResponseError, ServiceUnavailableError

UNANSWERED = (
    TimeoutError,
    NatsTimeoutError,
    NoRespondersError,
    NoStreamResponseError,
    ServiceUnavailableError,
)
