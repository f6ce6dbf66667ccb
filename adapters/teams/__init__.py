"""The Teams adapter on the Microsoft 365 Agents SDK: ``/api/messages`` (``app``, ``auth``,
``invokes``, ``references``), the outbound channel (``channel`` over ``connector``, cards from
``render``) and its hook into the composition (``mount``)."""
