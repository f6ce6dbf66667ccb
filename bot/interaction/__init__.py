"""The interactions: what a tap that is not an answer asks of the bot, decided once for every
platform.

- ``interactions``: the tenant a chat user acts in, the custom-answer form, the digest's next
  page, the read gate for anything shown, where an outcome is placed;
- ``declines``: "Not the right person", passed on to the next candidate;
- ``attention``: the steward's attention queue in chat (Slack's App Home, the Teams "queue"
  message), remembered per steward and re-shown when it changes.

The verified chat identity (``bot.chat.ChatUser``) lives in ``bot.chat``.
"""
