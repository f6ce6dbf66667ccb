"""The answer path: a verified tap becomes a durable answer, reaches the core once, in order.

- ``answers``: ``AnswerService.accept`` (one store call, before the platform's ack) and
  ``process`` (the chat identity resolved to a PERSON, the answer forwarded with its
  idempotency key);
- ``outbox``: the consumers that claim due entries and retry them with backoff;
- ``followups``: what the cards show once the core has answered (the clicker's card, other
  people's, the steward's);
- ``clicks``: what replaces the clicked card at once, before the core has answered;
- ``waiting``: what a durable answer not at the core yet shows ("being recorded", and "cannot be
  reached" only while the core is failing), for every platform.

The verified answer itself (``bot.chat.Callback``) lives in ``bot.chat``, which the adapters
import too.
"""
