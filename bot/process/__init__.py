"""The process around both paths: what ``clarify-bot serve`` and ``clarify-bot worker`` run.

- ``runtime``: the parts of one process (core client, store, channels, engine, answer path,
  interactions) built from the settings;
- ``service``: the web server the adapters mount their routes on, and the lifecycle of a
  process (start, ready, drain, stop);
- ``worker``: leases ``clarify:`` jobs, runs them in slots, heartbeats, housekeeping;
- ``health``: ``/healthz``, ``/readyz`` and what readiness checks;
- ``pauses``: per-installation pauses (a revoked Slack token pauses that workspace only).
"""
