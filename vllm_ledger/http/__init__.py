"""HTTP over the standard library alone, on the ground floor of the layers (it imports nothing
of the package but ``errors``):

    client.py   the one HTTP client: every outbound request, one total deadline, a byte cap;
                its parts: limits.py (the deadline, the cap, their errors), connect.py (the
                lookup, the connect, TLS), answer.py (reading an answer), redirects.py,
                urls.py (what a URL of a host is; a host as a URL writes it)
    server.py   the one bounded HTTP server: a route table behind every port vllm-ledger opens
                (the exporter's ``/metrics``, the notifier's endpoint); its parts:
                request_head.py (reading a request's head), closing.py (a close that keeps
                the answer), logsafe.py (a client's text in a log line)

Import the module you need (``from vllm_ledger.http import client``); this package imports
neither, so a reader that only fetches never loads the server, nor the reverse.
"""
