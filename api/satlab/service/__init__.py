"""The SatLab service: REST routes (routes/) over domain modules (scenarios, experiments, runs,
results, comparisons, auth, events, control, metrics), the PostgreSQL models and the job queue."""
