"""Renderers: models in, text out; none reads a file or calls a builder.

``text`` (terminal table), ``json`` (schema 1), ``status`` (the bot's bounded line), ``html``
(the page), ``timeline`` (chart, CSV, JSON), ``cost`` and ``advise``; ``safe`` escapes text that
came from disk before it reaches a terminal.
"""
