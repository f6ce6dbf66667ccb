"""The Teams adapter, on the Microsoft 365 Agents SDK: the channel (outbound), the callback
translator and its mount (inbound)."""
