"""Renderers: models in, text out; none reads a file, asks a remote or calls a builder.

``text`` (terminal table), ``json`` (schema 1), ``status`` (the bot's bounded line), ``html``
(the page), ``timeline`` (chart, CSV, JSON), ``cost`` and ``advise``, ``checks`` (the one check
table of ``doctor`` and ``preflight``), ``fleet``, ``ramp`` and ``notifier_status``. ``table``
is the one aligner (display widths) and ``safe`` escapes text that came from disk or a remote
before it reaches a terminal.
"""
