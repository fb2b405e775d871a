"""Where a muster system lives: settings, embedded servers, endpoints."""
