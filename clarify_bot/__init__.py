"""The composition at the top: the one place that knows every layer (bot/, adapters/, devcore/).

``clarify_bot.app`` builds the engine once and mounts each configured platform through its
adapter's hook; ``clarify_bot.cli`` is the ``clarify-bot`` console script.
"""
