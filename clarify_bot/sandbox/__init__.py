"""The local sandbox (``clarify-bot sandbox``): the real bot, the reference core and the local
Slack stand-in on 127.0.0.1, with a web page that shows each person's DM as Slack would draw it,
sends the requests Slack would send when a button is clicked, and shows the core's record beside
the cards. Nothing here is used by ``serve``; it assembles the same parts ``serve`` does.
"""
