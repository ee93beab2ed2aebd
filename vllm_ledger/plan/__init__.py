"""Planning tools over measured numbers: cost per million tokens, capacity advice, load ramps.

``cost`` is the pure money model; ``usage`` measures what it needs (ledger tokens, busy
seconds, average power); ``advise`` walks the capacity decision table
(docs/cost-and-capacity.md) over readings;
``ramp`` drives a server step by step and finds the knee; ``prom`` is a small client for
Prometheus' HTTP API shared by them, and ``partial`` says which of its answers the store called
partial or gave a warning with; ``prices`` reads the cost flags and config file.
"""
