"""Deployment helpers: a host file (``host.py``) becomes a reviewed vLLM launch script
(``launch.py``). Nothing here deploys anything: the script is started by a person."""
