"""Chat platform adapters: each translates between its platform and ``bot.channel``."""
