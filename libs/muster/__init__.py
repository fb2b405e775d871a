"""muster: an event-sourced GPU cluster scheduler."""

__version__ = "0.1.0"
