"""The Teams adapter, on the Microsoft 365 Agents SDK: the channel (outbound: ``channel``,
``connector``, ``render``), ``/api/messages`` (inbound: ``app``, ``auth``, ``invokes``,
``references``) and its hook into the composition (``mount``)."""
