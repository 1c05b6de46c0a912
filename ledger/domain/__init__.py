"""The domain: aggregates and their events, the limits on what they accept, errors and reasons.
Nothing here knows about storage, views or the wire."""
