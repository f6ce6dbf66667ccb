"""The Teams adapter on the Microsoft 365 Agents SDK: ``/api/messages`` (``app``, ``auth``,
``invokes``, ``references``) and its hook into the composition (``mount``)."""
